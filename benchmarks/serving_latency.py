"""Latency of the exported translator against decoding from Python.

Both sides run the same trained Transformer on the same backend
(tensorflow) with beam 4, alpha 0.6:

- "serving": the SavedModel from `keras_attention.export.export_translator`
  loaded with `tf.saved_model.load`, its `serving_default` signature called
  on raw strings (tokenization, beam search and detokenization in one
  graph call), as TensorFlow Serving runs it.
- "python": `keras_attention.data.translate` (SentencePiece in Python,
  `keras_attention.decoding.beam_search`, a traced `tf.function`, then
  detokenization), the path `applications/translation/evaluate.py` uses.

Batch 1 (each of the sentences alone, in turn) and batch 32 (all of them
in one call). One untimed pass of each first (traces every shape), then
the two sides alternate, `--repeats` times. Reported: median
milliseconds per sentence, and how many translations agree.

Usage:
    python benchmarks/serving_latency.py --run-dir runs/translation_demo \
        [--data-dir DIR] [--repeats 5]

Writes `benchmarks/results/serving_latency.json` and `.md`.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SENTENCES = 32


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--name", default="serving_latency")
    args = parser.parse_args(argv)
    common.set_backend("tensorflow")

    import tensorflow as tf

    from keras_attention import data
    from keras_attention import export
    from keras_attention.data import translation
    from keras_attention.export.archive import load_run_model

    model = load_run_model(args.run_dir)
    tokenizer = translation.load_tokenizer(
        os.path.join(args.run_dir, translation.TOKENIZER_FILE)
    )
    sources, _ = data.load_multi30k("test2016", data_dir=args.data_dir)
    sentences = sources[:SENTENCES]
    folder = tempfile.mkdtemp(prefix="serving_latency_")
    start = time.perf_counter()
    path = export.export_translator(
        args.run_dir, folder, beam_size=args.beam_size
    )
    export_seconds = time.perf_counter() - start
    serve = tf.saved_model.load(path)
    signature = serve.signatures["serving_default"]

    def serving(batch):
        out = signature(inputs=tf.constant(batch))
        return [t.decode("utf-8") for t in out["outputs"].numpy()]

    def python(batch):
        return translation.translate(
            model,
            tokenizer,
            batch,
            beam_size=args.beam_size,
            batch_size=len(batch),
        )

    batches = {
        1: [[s] for s in sentences],
        SENTENCES: [sentences],
    }
    results = []
    for size, calls in batches.items():
        # Untimed pass: traces every padded shape; compares the outputs.
        served = [t for batch in calls for t in serving(batch)]
        decoded = [t for batch in calls for t in python(batch)]
        agree = sum(a == b for a, b in zip(served, decoded))

        def run_all(side, calls=calls):
            for batch in calls:
                side(batch)

        times = common.time_interleaved(
            [lambda: run_all(serving), lambda: run_all(python)],
            args.repeats,
        )
        per_sentence = [
            [1000.0 * t / len(sentences) for t in side] for side in times
        ]
        row = {
            "batch_size": size,
            "serving_ms_per_sentence": round(
                statistics.median(per_sentence[0]), 2
            ),
            "python_ms_per_sentence": round(
                statistics.median(per_sentence[1]), 2
            ),
            "identical_translations": agree,
            "sentences": len(sentences),
            "serving_ms_per_sentence_all": [
                round(t, 2) for t in per_sentence[0]
            ],
            "python_ms_per_sentence_all": [
                round(t, 2) for t in per_sentence[1]
            ],
        }
        row["python_over_serving"] = round(
            row["python_ms_per_sentence"] / row["serving_ms_per_sentence"], 2
        )
        results.append(row)
        print(
            f"batch {size}: serving {row['serving_ms_per_sentence']} ms, "
            f"python {row['python_ms_per_sentence']} ms per sentence "
            f"(x{row['python_over_serving']}), {agree}/{len(sentences)} "
            "identical"
        )
    report = {
        "backend": "tensorflow",
        "beam_size": args.beam_size,
        "alpha": 0.6,
        "repeats": args.repeats,
        "model": {
            "parameters": int(model.count_params()),
            "num_layers": model.num_layers,
            "hidden_dim": model.hidden_dim,
            "vocabulary_size": model.vocabulary_size,
            "max_sequence_length": model.max_sequence_length,
        },
        "sentences": "the first 32 Multi30k test2016 English sources",
        "export_seconds": round(export_seconds, 1),
        "results": results,
        "environment": common.environment("tensorflow"),
    }
    out = os.path.join(common.RESULTS_DIR, f"{args.name}.json")
    common.write_json(out, report)
    table = common.markdown_table(
        [
            "batch",
            "serving ms/sentence",
            "python ms/sentence",
            "python / serving",
            "identical",
        ],
        [
            (
                r["batch_size"],
                r["serving_ms_per_sentence"],
                r["python_ms_per_sentence"],
                r["python_over_serving"],
                f"{r['identical_translations']}/{r['sentences']}",
            )
            for r in results
        ],
    )
    with open(os.path.join(common.RESULTS_DIR, f"{args.name}.md"), "w") as f:
        f.write(
            f"Exported translator vs Python decoding, tensorflow, beam "
            f"{args.beam_size}, medians of {args.repeats} interleaved "
            f"repeats, {report['model']['parameters']:,} parameters.\n\n"
            + table
        )
    print(f"Wrote {out}")


if __name__ == "__main__":
    main()
