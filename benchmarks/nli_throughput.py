"""Training throughput of the NLI models, side by side, in one process.

Trains each model of the NLI application (mean of word vectors, the
decomposable attention model without and with intra-sentence attention,
and the ReSAN classifier with its REINFORCE-trained token samplers) on the
same sentence pairs with `model.fit`, and reports training sentence pairs
per second. Each model runs with length-bucketed batches
(`keras_attention.data.BucketedBatches`, widths in steps of 8) and, with
`--padded`, also with every batch padded to the longest sentence of the
corpus (the application's layout before bucketing), which shows what
bucketing saves.

Every configuration first fits one warm-up epoch over the timed pairs (so
that each batch width is compiled), then the configurations are timed
round-robin, `--repeats` times (A, B, C, A, B, C, ...), one epoch over the
same pairs each time; the table gives the median and the spread.

Usage (from the repository root):

    KERAS_ATTENTION_DATA=DATA python benchmarks/nli_throughput.py \\
        --backend tensorflow --pairs 1600 --repeats 3

Writes `benchmarks/results/nli_throughput_<backend>.json` and `.md`.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

MODELS = ("bow", "decomposable", "decomposable_intra", "resan")


def load_pairs(dataset, data_dir, num_pairs):
    """Token ids `{"premise", "hypothesis"}`, labels and the embeddings."""
    import numpy as np

    from keras_attention import data

    if dataset == "snli":
        rows = data.load_snli("train", data_dir=data_dir)
        premises, hypotheses = rows["premise"], rows["hypothesis"]
        labels = rows["label"]
    else:
        rows = data.load_sick("train", data_dir=data_dir)
        premises, hypotheses = rows["sentence_a"], rows["sentence_b"]
        labels = rows["entailment"]
    premises = [data.tokenize(s) for s in premises[:num_pairs]]
    hypotheses = [data.tokenize(s) for s in hypotheses[:num_pairs]]
    vocabulary = data.build_vocabulary(premises + hypotheses)
    index = {word: i for i, word in enumerate(vocabulary)}
    length = max(len(s) for s in premises + hypotheses)

    def ids(sentences):
        array = np.zeros((len(sentences), length), "int32")
        for row, sentence in enumerate(sentences):
            array[row, : len(sentence)] = [index.get(w, 1) for w in sentence]
        return array

    matrix, _ = data.load_glove(vocabulary, data_dir=data_dir)
    matrix[0] = 0.0
    inputs = {"premise": ids(premises), "hypothesis": ids(hypotheses)}
    return inputs, data.encode_labels(labels[:num_pairs]), matrix, length


def build(name, matrix, seed):
    import keras

    from keras_attention import models

    kwargs = {
        "vocabulary_size": matrix.shape[0],
        "embeddings": matrix,
        "hidden_dim": 200,
        "dropout": 0.2,
        "seed": seed,
    }
    if name == "resan":
        model = models.ReSANClassifier(**kwargs)
    elif name == "bow":
        model = models.bag_of_words_model(**kwargs)
    else:
        model = models.decomposable_attention_model(
            intra_attention=name == "decomposable_intra", **kwargs
        )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="sparse_categorical_crossentropy",
    )
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--dataset", choices=("snli", "sick"), default="snli")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--pairs", type=int, default=1600)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument(
        "--padded",
        action="store_true",
        help="Also time every model on batches padded to the longest sentence.",
    )
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.error(f"--models: unknown {unknown}; choose from {MODELS}")

    common.set_backend(args.backend)
    import keras
    import numpy as np

    from keras_attention.data import BucketedBatches

    inputs, labels, matrix, length = load_pairs(
        args.dataset, args.data_dir, args.pairs
    )
    layouts = {"bucketed": 8}
    if args.padded:
        layouts["padded"] = length  # one width: the longest sentence

    configurations = []
    for name in names:
        for layout, step in layouts.items():
            keras.utils.set_random_seed(args.seed)
            batches = BucketedBatches(
                inputs,
                labels,
                batch_size=args.batch_size,
                width_step=step,
                shuffle=False,
            )
            model = build(name, matrix, args.seed)
            start = time.perf_counter()
            model.fit(batches.as_dataset(), epochs=1, verbose=0)
            warmup = time.perf_counter() - start
            configurations.append(
                {
                    "model": name,
                    "layout": layout,
                    "batches": batches,
                    "keras_model": model,
                    "warmup_seconds": warmup,
                    "seconds": [],
                }
            )
            print(f"{name} ({layout}): warm-up {warmup:.1f} s", flush=True)

    for _ in range(args.repeats):
        for configuration in configurations:
            dataset = configuration["batches"].as_dataset()
            start = time.perf_counter()
            configuration["keras_model"].fit(dataset, epochs=1, verbose=0)
            configuration["seconds"].append(time.perf_counter() - start)

    results = []
    for configuration in configurations:
        seconds = configuration["seconds"]
        median = statistics.median(seconds)
        model = configuration["keras_model"]
        results.append(
            {
                "model": configuration["model"],
                "layout": configuration["layout"],
                "pairs_per_second": args.pairs / median,
                "pairs_per_second_all": [args.pairs / s for s in seconds],
                "seconds_per_epoch": seconds,
                "warmup_seconds": configuration["warmup_seconds"],
                "trainable_parameters": int(
                    sum(np.prod(w.shape) for w in model.trainable_weights)
                ),
            }
        )
    report = {
        "benchmark": "nli_throughput",
        "backend": args.backend,
        "dataset": args.dataset,
        "pairs": args.pairs,
        "batch_size": args.batch_size,
        "padded_length": length,
        "repeats": args.repeats,
        "environment": common.environment(args.backend),
        "results": results,
    }
    fastest = max(r["pairs_per_second"] for r in results)
    rows = [
        (
            r["model"],
            r["layout"],
            f"{r['trainable_parameters']:,}",
            f"{r['pairs_per_second']:.0f}",
            f"{min(r['pairs_per_second_all']):.0f}-"
            f"{max(r['pairs_per_second_all']):.0f}",
            f"{r['pairs_per_second'] / fastest:.2f}",
        )
        for r in results
    ]
    table = common.markdown_table(
        (
            "model",
            "batches",
            "trainable parameters",
            "pairs/s (median)",
            "range",
            "vs fastest",
        ),
        rows,
    )
    header = (
        f"# NLI training throughput ({args.backend}, {args.dataset}, "
        f"{args.pairs} training pairs, batch {args.batch_size}, "
        f"{args.repeats} interleaved repeats)\n\n"
        f"`python benchmarks/nli_throughput.py --backend {args.backend} "
        f"--dataset {args.dataset} --pairs {args.pairs} --repeats "
        f"{args.repeats}{' --padded' if args.padded else ''}`\n\n"
        f"Load average at the end: "
        f"{report['environment']['load_average_1_5_15min']}.\n\n"
    )
    common.write_report(
        f"nli_throughput_{args.backend}", report, header + table, args.json_out
    )


if __name__ == "__main__":
    main()
