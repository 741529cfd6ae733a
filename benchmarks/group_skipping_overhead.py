"""Training-step cost of `optimizers.GroupSkippingOptimizer`.

The optimizer computes every group's update and selects an idle group's
state back, so each step copies the variables and optimizer state once.
This measures what that costs on the NLI application's ReSAN classifier
(SNLI-subset size: vocabulary 10,000, frozen 50-d embeddings, hidden 200,
batch 32, length 30), compiled with one Adam for every variable
(`plain`) and with `models.resan.with_sampler_optimizer(Adam)`
(`grouped`), both in the joint phase. One `train_on_batch` of each, in
turn (`common.time_interleaved`), after warm-up steps; the ratio is paired
round by round.

Usage (from the repository root):

    python benchmarks/group_skipping_overhead.py --backend tensorflow

Writes `benchmarks/results/group_skipping_overhead_<backend>.json` and
`.md`.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json-out")
    args = parser.parse_args(argv)
    common.set_backend(args.backend)
    import keras
    import numpy as np

    from keras_attention import models

    rng = np.random.default_rng(0)
    batch, length, vocabulary = 32, 30, 10_000
    x = {
        "premise": rng.integers(1, vocabulary, (batch, length)),
        "hypothesis": rng.integers(1, vocabulary, (batch, length)),
    }
    y = rng.integers(0, 3, (batch,))

    def model_with(optimizer):
        model = models.ReSANClassifier(
            vocabulary_size=vocabulary,
            embedding_dim=50,
            hidden_dim=200,
            dropout=0.2,
            seed=0,
        )
        model.compile(
            optimizer=optimizer, loss="sparse_categorical_crossentropy"
        )
        return model

    plain = model_with(keras.optimizers.Adam(1e-3))
    grouped = model_with(
        models.resan.with_sampler_optimizer(keras.optimizers.Adam(1e-3))
    )

    def step(model):
        # Returns NumPy values: the step has finished.
        return lambda: model.train_on_batch(x, y)

    steps = [step(plain), step(grouped)]
    common.time_interleaved(steps, args.warmup)
    times = common.time_interleaved(steps, args.repeats, args.warmup)
    ratio = common.paired_ratios(times[1], times[0])
    report = {
        "backend": args.backend,
        "batch": batch,
        "length": length,
        "parameters": plain.count_params(),
        "trainable_parameters": int(
            sum(np.prod(v.shape) for v in plain.trainable_variables)
        ),
        "plain_ms": round(common.median_ms(times[0]), 1),
        "grouped_ms": round(common.median_ms(times[1]), 1),
        "grouped_over_plain": ratio,
        "environment": common.environment(args.backend),
    }
    table = common.markdown_table(
        [
            "backend",
            "plain Adam (ms)",
            "grouped (ms)",
            "ratio, median [min, max]",
        ],
        [
            [
                args.backend,
                report["plain_ms"],
                report["grouped_ms"],
                f"{ratio['median']} [{ratio['min']}, {ratio['max']}] "
                f"over {ratio['rounds']} rounds",
            ]
        ],
    )
    markdown = (
        "`python benchmarks/group_skipping_overhead.py "
        f"--backend {args.backend}`: ReSAN classifier training step, median "
        f"of {args.repeats} interleaved steps.\n\n{table}"
    )
    common.write_report(
        f"group_skipping_overhead_{args.backend}",
        report,
        markdown,
        args.json_out,
    )


if __name__ == "__main__":
    main()
