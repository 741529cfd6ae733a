"""Latency of the exported translator against decoding from Python.

Both sides run the same trained Transformer with beam 4, alpha 0.6, and
the Python side on the backend chosen with `--backend`:

- "serving": the SavedModel from `keras_attention.export.export_translator`
  loaded with `tf.saved_model.load`, its `serving_default` signature called
  on raw strings (tokenization, beam search and detokenization in one
  graph call), as TensorFlow Serving runs it.
  On jax the export runs in a tensorflow-backend subprocess (the route
  of every model trained on jax); the SavedModel is then loaded in the
  benchmark's own process.
- "python": `keras_attention.decoding.translate` (SentencePiece in Python,
  `keras_attention.decoding.beam_search` traced with `tf.function` on
  tensorflow, compiled with `jax.jit` on jax, then detokenization), the
  path `applications/translation/evaluate.py` uses.

Batch 1 (each of the sentences alone, in turn) and batch 32 (all of them
in one call). One untimed pass of each first (traces every shape), then
the two sides alternate, `--repeats` times. Reported: median
milliseconds per sentence of wall time and of process CPU time (all
threads; steadier than wall time on a shared machine), and how many
translations agree.

Usage:
    python benchmarks/serving_latency.py --run-dir runs/translation_demo \
        [--backend tensorflow|jax] [--data-dir DIR] [--repeats 5] \
        [--jit-compile]

`--jit-compile` exports with XLA-compiled searches (TF Serving on CPU runs
those with `--xla_cpu_compilation_enabled=true`).

Writes `benchmarks/results/<name>.json` and `.md` (`--name`, default
`serving_latency`).
"""

import argparse
import json
import os
import shutil
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
    parser.add_argument(
        "--backend", default="tensorflow", choices=("tensorflow", "jax")
    )
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--name", default="serving_latency")
    parser.add_argument(
        "--jit-compile",
        action="store_true",
        help="Export with XLA-compiled searches (export_translator's "
        "jit_compile=True).",
    )
    args = parser.parse_args(argv)
    common.set_backend(args.backend)

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SavedModel's text ops)

    from keras_attention import data
    from keras_attention import decoding
    from keras_attention import export
    from keras_attention.data import translation
    from keras_attention.training.runs import load_model

    model = load_model(args.run_dir)
    tokenizer = translation.load_tokenizer(
        os.path.join(args.run_dir, translation.TOKENIZER_FILE)
    )
    sources, _ = data.load_multi30k("test2016", data_dir=args.data_dir)
    sentences = sources[:SENTENCES]
    folder = tempfile.mkdtemp(prefix="serving_latency_")
    start = time.perf_counter()
    path = export.export_translator(
        args.run_dir,
        folder,
        beam_size=args.beam_size,
        jit_compile=args.jit_compile,
    )
    export_seconds = time.perf_counter() - start
    serve = tf.saved_model.load(path)
    signature = serve.signatures["serving_default"]

    def serving(batch):
        out = signature(inputs=tf.constant(batch))
        return [t.decode("utf-8") for t in out["outputs"].numpy()]

    def python(batch):
        return decoding.translate(
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

        wall, cpu = time_interleaved(
            [lambda: run_all(serving), lambda: run_all(python)],
            args.repeats,
        )
        row = {
            "batch_size": size,
            "identical_translations": agree,
            "sentences": len(sentences),
        }
        for kind, times in (("", wall), ("cpu_", cpu)):
            per_sentence = [
                [1000.0 * t / len(sentences) for t in side] for side in times
            ]
            for side, values in zip(("serving", "python"), per_sentence):
                key = f"{side}_{kind}ms_per_sentence"
                row[key] = round(statistics.median(values), 2)
                row[key + "_all"] = [round(t, 2) for t in values]
            suffix = "_cpu" if kind else ""
            row[f"python_over_serving{suffix}"] = round(
                row[f"python_{kind}ms_per_sentence"]
                / row[f"serving_{kind}ms_per_sentence"],
                2,
            )
            # Each repeat runs both sides back to back, under about the
            # same load from other processes: the median of the ratios.
            row[f"python_over_serving{suffix}_paired"] = round(
                statistics.median(p / s for s, p in zip(*per_sentence)),
                2,
            )
        results.append(row)
        print(
            f"batch {size}: serving {row['serving_ms_per_sentence']} ms, "
            f"python {row['python_ms_per_sentence']} ms per sentence "
            f"(x{row['python_over_serving']}; CPU "
            f"{row['serving_cpu_ms_per_sentence']} vs "
            f"{row['python_cpu_ms_per_sentence']} ms, "
            f"x{row['python_over_serving_cpu']}), "
            f"{agree}/{len(sentences)} identical",
            flush=True,
        )
    trained = {}
    training_file = os.path.join(args.run_dir, "training.json")
    if os.path.isfile(training_file):
        with open(training_file) as f:
            trained = json.load(f)
    report = {
        "backend": args.backend,
        "run_dir": os.path.basename(os.path.normpath(args.run_dir)),
        "trained_on": trained.get("backend"),
        "preset": trained.get("preset"),
        "beam_size": args.beam_size,
        "jit_compile": args.jit_compile,
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
        "environment": common.environment(args.backend),
    }
    out = os.path.join(common.RESULTS_DIR, f"{args.name}.json")
    common.write_json(out, report)
    table = common.markdown_table(
        [
            "batch",
            "serving ms/sentence",
            "python ms/sentence",
            "python / serving",
            "CPU ms/sentence: serving / python",
            "identical",
        ],
        [
            (
                r["batch_size"],
                r["serving_ms_per_sentence"],
                r["python_ms_per_sentence"],
                r["python_over_serving"],
                f"{r['serving_cpu_ms_per_sentence']} / "
                f"{r['python_cpu_ms_per_sentence']}",
                f"{r['identical_translations']}/{r['sentences']}",
            )
            for r in results
        ],
    )
    with open(os.path.join(common.RESULTS_DIR, f"{args.name}.md"), "w") as f:
        f.write(
            f"Exported translator vs Python decoding on {args.backend}, "
            f"beam {args.beam_size}"
            + (
                ", searches XLA-compiled (`--jit-compile`)"
                if args.jit_compile
                else ""
            )
            + f", medians of {args.repeats} interleaved "
            f"repeats; {report['preset']} preset trained on "
            f"{report['trained_on']} ({report['run_dir']}), "
            f"{report['model']['parameters']:,} parameters; export "
            f"{report['export_seconds']} s.\n\n" + table
        )
    shutil.rmtree(folder, ignore_errors=True)
    print(f"Wrote {out}")


def time_interleaved(steps, repeats):
    """Like `common.time_interleaved`, with process CPU time as well.

    Returns `(wall, cpu)`: one list of seconds per step for each.
    """
    wall = [[] for _ in steps]
    cpu = [[] for _ in steps]
    for _ in range(repeats):
        for i, step in enumerate(steps):
            start, start_cpu = time.perf_counter(), time.process_time()
            step()
            wall[i].append(time.perf_counter() - start)
            cpu[i].append(time.process_time() - start_cpu)
    return wall, cpu


if __name__ == "__main__":
    main()
