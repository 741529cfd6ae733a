"""Prediction on length-bucketed batches against padded arrays, side by side.

Predicts the same SNLI pairs with each NLI model two ways, in one process:
`model.predict` on arrays padded to the longest sentence of the pairs (what
the applications' `evaluate.py` did before) and
`keras_attention.data.predict_in_buckets` (batches cut to multiples of 8
tokens, the outputs put back in the pairs' order). The models are freshly
built and untrained: the work per pair does not depend on the weights.

Before timing, both ways run once (so every batch width is compiled) and
their outputs are compared: the largest absolute difference of the class
probabilities and the share of pairs with the same predicted class go into
the report. Then the two ways are timed round-robin, `--repeats` times;
the table gives the median of each and the median of the per-round
ratios.

Usage (from the repository root):

    KERAS_ATTENTION_DATA=DATA python benchmarks/bucketed_prediction.py \\
        --backend tensorflow --pairs 2000 --repeats 3

Writes `benchmarks/results/bucketed_prediction_<backend>.json` and `.md`.
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import nli_throughput  # noqa: E402


def probabilities(outputs):
    # ReSAN returns a dict (class probabilities beside the samplers').
    if isinstance(outputs, dict):
        return outputs["probabilities"]
    return outputs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--dataset", choices=("snli", "sick"), default="snli")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default=",".join(nli_throughput.MODELS))
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - set(nli_throughput.MODELS))
    if unknown:
        parser.error(
            f"--models: unknown {unknown}; choose from {nli_throughput.MODELS}"
        )
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1. Received: {args.repeats}")

    common.set_backend(args.backend)
    import numpy as np

    from keras_attention import data

    inputs, _, matrix, length = nli_throughput.load_pairs(
        args.dataset, args.data_dir, args.pairs
    )
    num_pairs = len(inputs["premise"])
    results = []
    for name in names:
        model = nli_throughput.build(name, matrix, args.seed)

        def padded(model=model):
            return model.predict(inputs, batch_size=args.batch_size, verbose=0)

        def bucketed(model=model):
            return data.predict_in_buckets(
                model, inputs, batch_size=args.batch_size
            )

        a = np.asarray(probabilities(padded()))
        b = np.asarray(probabilities(bucketed()))
        padded_s, bucketed_s = common.time_interleaved(
            [padded, bucketed], args.repeats
        )
        results.append(
            {
                "model": name,
                "padded_seconds": padded_s,
                "bucketed_seconds": bucketed_s,
                "speed_up": common.paired_ratios(padded_s, bucketed_s),
                "max_abs_probability_difference": float(np.max(np.abs(a - b))),
                "same_class_share": float(
                    np.mean(a.argmax(-1) == b.argmax(-1))
                ),
            }
        )
        print(name, results[-1]["speed_up"], flush=True)

    report = {
        "benchmark": "bucketed_prediction",
        "backend": args.backend,
        "dataset": args.dataset,
        "pairs": num_pairs,
        "batch_size": args.batch_size,
        "padded_length": length,
        "repeats": args.repeats,
        "environment": common.environment(args.backend),
        "results": results,
    }
    rows = [
        (
            r["model"],
            f"{num_pairs / statistics.median(r['padded_seconds']):.0f}",
            f"{num_pairs / statistics.median(r['bucketed_seconds']):.0f}",
            f"{r['speed_up']['median']:.2f} "
            f"({r['speed_up']['min']:.2f}-{r['speed_up']['max']:.2f})",
            f"{r['max_abs_probability_difference']:.1e}",
            f"{100 * r['same_class_share']:.2f}%",
        )
        for r in results
    ]
    table = common.markdown_table(
        (
            "model",
            "padded pairs/s",
            "bucketed pairs/s",
            "speed-up (median, range)",
            "max abs. probability difference",
            "same class",
        ),
        rows,
    )
    header = (
        f"# Bucketed prediction ({args.backend}, {args.dataset}, "
        f"{num_pairs} pairs padded to {length} tokens, batch "
        f"{args.batch_size}, {args.repeats} interleaved repeats)\n\n"
        f"`python benchmarks/bucketed_prediction.py --backend {args.backend} "
        f"--dataset {args.dataset} --pairs {args.pairs} --repeats "
        f"{args.repeats}`\n\n"
        f"Load average at the end: "
        f"{report['environment']['load_average_1_5_15min']}.\n\n"
    )
    common.write_report(
        f"bucketed_prediction_{args.backend}",
        report,
        header + table,
        args.json_out,
    )


if __name__ == "__main__":
    main()
