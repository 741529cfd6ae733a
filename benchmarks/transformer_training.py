"""Training throughput of our Transformer vs one built from keras-hub layers.

"ours" is `keras_attention.models.Transformer`; "keras_hub" is the same
encoder-decoder assembled from keras-hub's `TokenAndPositionEmbedding`,
`TransformerEncoder` and `TransformerDecoder`:

- same sizes: layers, width, heads, feed-forward width, vocabulary;
- same tying: one `TokenAndPositionEmbedding` embeds source and target, and
  its token table, transposed, gives the logits (three-way tying);
- same positions: learned (keras-hub has no sinusoidal option in
  `TokenAndPositionEmbedding`), so ours is built with `position="learned"`;
- same scaling: token embeddings times `sqrt(width)` (built into ours; a
  `Rescaling` layer on the keras-hub side, which then scales the learned
  positions too: one multiply either way);
- same dropout: 0.1 on the embeddings, residual branches and attention
  weights (keras-hub's `dropout` covers all three in its blocks; ours gets
  `dropout=0.1, attention_dropout=0.1`);
- same post-norm blocks, ReLU feed-forward, layer-norm epsilon 1e-5,
  explicit padding masks from the token ids, causal decoder
  self-attention;
- same loss (label-smoothed sparse cross-entropy, epsilon 0.1, padding
  ignored), optimizer (Adam 0.9 / 0.98 / 1e-9, constant learning rate),
  no metrics, same `jit_compile`.

The script checks that both models have the same number of parameters.
Each model trains on the same fixed-shape batches (random ids, random
lengths, padded) with `train_on_batch`, which returns the loss to the host
(so every step is finished when it returns). After a warm-up that compiles,
groups of `--steps` steps alternate between the models for `--repeats`
rounds, each round starting with the next model (`common.time_interleaved`);
throughput = real (non-padding) target tokens / time per group; medians are
reported. Beside the ratio of the medians, the ratio of each round's two
groups (keras-hub's time over ours) is reported as a median with its range:
the two groups of a round share that round's machine load, and the range
shows how far one round can stray.

Achieved GFLOP/s counts the model's matrix products, from its sizes and the
padded batch shapes (`matmul_flops`): per layer the query/key/value/output
projections, the two attention products (scores and weighted values), the
cross-attention's, the feed-forward's two products, and the output
projection onto the vocabulary; a training step is three times the forward
count (the backward pass of a product is two products of the same size).
Embedding look-ups, softmax, norms and the optimizer are not counted, so the
figure is a lower bound on the work done. The peak is measured in the same
run and the same precision: the median GFLOP/s of a jit-compiled square
matrix product (`--peak-size`, default 2048) on this backend. The fraction
of peak is achieved over peak.

`--precisions float32,mixed_bfloat16` builds both models under each dtype
policy (`mixed_bfloat16`: float32 variables, bfloat16 compute, the loss in
float32) and times all four in one interleaved loop, so the bfloat16 /
float32 ratio comes from the same minutes; the peak is measured in each
precision's compute dtype.

Usage:

    python benchmarks/transformer_training.py                  # tf + jax
    python benchmarks/transformer_training.py --backends tensorflow,jax,torch
    python benchmarks/transformer_training.py --backend jax --repeats 5

Without `--backend` each backend runs in its own process and the merged
results go to `benchmarks/results/transformer_training.{json,md}`.
"""

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

NAMES = ("ours", "keras_hub")
# A dtype policy -> the dtype its matrix products run in (for the peak).
PRECISIONS = {"float32": "float32", "mixed_bfloat16": "bfloat16"}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=common.BACKENDS)
    parser.add_argument("--backends", default="tensorflow,jax")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--vocabulary", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--source-length", type=int, default=32)
    parser.add_argument("--target-length", type=int, default=32)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--jit-compile",
        default="auto",
        choices=("auto", "true", "false"),
        help="model.compile(jit_compile=...) for both models. 'auto' is "
        "keras's default: XLA on jax; on tensorflow without a GPU keras "
        "turns it off; torch never compiles.",
    )
    parser.add_argument(
        "--precisions",
        default="float32",
        help="Comma-separated dtype policies (float32, mixed_bfloat16); "
        "every precision's models are built and timed in one process.",
    )
    parser.add_argument(
        "--peak-size",
        type=int,
        default=2048,
        help="Side of the square matrix product that measures the peak.",
    )
    parser.add_argument("--output", default="transformer_training")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--merge",
        help="Comma-separated JSON files written by single-backend runs "
        "(--backend B --json-out FILE): write their merged results files "
        "instead of running anything.",
    )
    parser.add_argument("--json-out", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def make_batches(args, rng):
    """Fixed-shape batches: ids in [4, V), a random real length per row."""
    batches = []
    for _ in range(args.batches):
        source = rng.integers(
            4, args.vocabulary, (args.batch, args.source_length)
        )
        target = rng.integers(
            4, args.vocabulary, (args.batch, args.target_length)
        )
        source_lengths = rng.integers(
            args.source_length // 3, args.source_length + 1, args.batch
        )
        target_lengths = rng.integers(
            args.target_length // 3, args.target_length + 1, args.batch
        )
        source[np.arange(args.source_length) >= source_lengths[:, None]] = 0
        target[np.arange(args.target_length) >= target_lengths[:, None]] = 0
        decoder_input = np.concatenate(
            [np.ones((args.batch, 1), target.dtype), target[:, :-1]], axis=1
        )
        decoder_input[target == 0] = 0
        inputs = {
            "encoder_token_ids": source.astype("int32"),
            "decoder_token_ids": decoder_input.astype("int32"),
        }
        batches.append((inputs, target.astype("int32")))
    return batches


def matmul_flops(sizes, vocabulary, batch, source_length, target_length):
    """Floating-point operations of one training step's matrix products.

    Counted on the padded shapes (the work the hardware does): a product of
    an (m, k) and a (k, n) matrix is 2mkn operations; the forward count is
    tripled for forward plus backward.
    """
    d = sizes["hidden_dim"]
    f = sizes["intermediate_dim"]
    n = sizes["num_layers"]
    s, t, b = source_length, target_length, batch

    def product(m, k, n_):
        return 2 * m * k * n_

    encoder = (
        4 * product(b * s, d, d)  # query, key, value, output projections
        + 2 * product(b * s, d, s)  # scores and weighted values (all heads)
        + product(b * s, d, f)
        + product(b * s, f, d)  # feed-forward
    )
    decoder = (
        4 * product(b * t, d, d)  # self-attention projections
        + 2 * product(b * t, d, t)  # self-attention products
        + 2 * product(b * t, d, d)  # cross-attention query and output
        + 2 * product(b * s, d, d)  # cross-attention key and value
        + 2 * product(b * t, d, s)  # cross-attention products
        + product(b * t, d, f)
        + product(b * t, f, d)  # feed-forward
    )
    logits = product(b * t, d, vocabulary)
    return 3 * (n * encoder + n * decoder + logits)


def measure_peak(backend, size, dtype, repeats):
    """Median GFLOP/s of a compiled (size, size) @ (size, size) product."""
    import keras

    rng = np.random.default_rng(0)
    a = keras.ops.cast(rng.standard_normal((size, size)), dtype)
    b = keras.ops.cast(rng.standard_normal((size, size)), dtype)
    if backend == "tensorflow":
        import tensorflow as tf

        product = tf.function(tf.matmul, jit_compile=True)
    elif backend == "jax":
        import jax

        product = jax.jit(jax.numpy.matmul)
    else:
        import torch

        product = torch.matmul

    def run():
        corner = product(a, b)[:1, :1]
        keras.ops.convert_to_numpy(keras.ops.cast(corner, "float32"))

    run()  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 2 * size**3 / statistics.median(times) / 1e9


def build_keras_hub(sizes, vocabulary, max_length, dropout, epsilon, seed):
    import keras
    import keras_hub
    from keras import ops

    width = sizes["hidden_dim"]
    embedding = keras_hub.layers.TokenAndPositionEmbedding(
        vocabulary,
        max_length,
        width,
        tie_weights=True,
        name="shared_embedding",
    )
    scale = keras.layers.Rescaling(math.sqrt(width), name="embedding_scale")
    encoder_ids = keras.Input((None,), dtype="int32", name="encoder_token_ids")
    decoder_ids = keras.Input((None,), dtype="int32", name="decoder_token_ids")
    encoder_mask = ops.not_equal(encoder_ids, 0)
    decoder_mask = ops.not_equal(decoder_ids, 0)
    x = scale(embedding(encoder_ids))
    x = keras.layers.Dropout(dropout, seed=seed)(x)
    for i in range(sizes["num_layers"]):
        x = keras_hub.layers.TransformerEncoder(
            sizes["intermediate_dim"],
            sizes["num_heads"],
            dropout=dropout,
            layer_norm_epsilon=epsilon,
            name=f"encoder_block_{i}",
        )(x, padding_mask=encoder_mask)
    y = scale(embedding(decoder_ids))
    y = keras.layers.Dropout(dropout, seed=seed + 1)(y)
    for i in range(sizes["num_layers"]):
        y = keras_hub.layers.TransformerDecoder(
            sizes["intermediate_dim"],
            sizes["num_heads"],
            dropout=dropout,
            layer_norm_epsilon=epsilon,
            name=f"decoder_block_{i}",
        )(
            y,
            x,
            decoder_padding_mask=decoder_mask,
            encoder_padding_mask=encoder_mask,
        )
    logits = embedding.token_embedding(y, reverse=True)
    return keras.Model(
        {"encoder_token_ids": encoder_ids, "decoder_token_ids": decoder_ids},
        logits,
        name="keras_hub_transformer",
    )


def run_backend(args):
    common.set_backend(args.backend)
    import keras

    from keras_attention import losses
    from keras_attention.models import Transformer
    from keras_attention.models.transformer_base import PRESETS

    keras.utils.set_random_seed(args.seed)
    precisions = args.precisions.split(",")
    for precision in precisions:
        if precision not in PRECISIONS:
            raise SystemExit(
                f"Unknown precision. Expected some of {PRECISIONS}. "
                f"Received: precisions={args.precisions!r}"
            )
    sizes = {
        key: PRESETS[args.preset][key]
        for key in ("num_layers", "hidden_dim", "num_heads", "intermediate_dim")
    }
    dropout, epsilon = 0.1, 1e-5
    max_length = max(args.source_length, args.target_length)
    jit = {"auto": "auto", "true": True, "false": False}[args.jit_compile]
    models = {}  # (precision, name) -> model
    for precision in precisions:
        # Layers take the global policy when they are made; each model
        # keeps the one it was built under.
        keras.config.set_dtype_policy(precision)
        models[precision, "ours"] = Transformer(
            vocabulary_size=args.vocabulary,
            dropout=dropout,
            attention_dropout=dropout,
            position="learned",
            max_sequence_length=max_length,
            layer_norm_epsilon=epsilon,
            seed=args.seed,
            **sizes,
        )
        models[precision, "keras_hub"] = build_keras_hub(
            sizes, args.vocabulary, max_length, dropout, epsilon, args.seed
        )
    keras.config.set_dtype_policy("float32")
    counts = {
        name: int(models[precisions[0], name].count_params()) for name in NAMES
    }
    if counts["ours"] != counts["keras_hub"]:
        raise SystemExit(f"Parameter counts differ: {counts}")
    for model in models.values():
        model.compile(
            optimizer=keras.optimizers.Adam(
                1e-4, beta_1=0.9, beta_2=0.98, epsilon=1e-9
            ),
            loss=losses.LabelSmoothedSparseCategoricalCrossentropy(epsilon=0.1),
            jit_compile=jit,
        )
    batches = make_batches(args, np.random.default_rng(args.seed))
    tokens = sum(int((labels != 0).sum()) for _, labels in batches)
    tokens_per_group = tokens * args.steps / len(batches)

    def group(model):
        def run():
            for step in range(args.steps):
                inputs, labels = batches[step % len(batches)]
                model.train_on_batch(inputs, labels)

        return run

    compile_s = {}
    first_loss = {}
    for key, model in models.items():
        start = time.perf_counter()
        inputs, labels = batches[0]
        first_loss[key] = float(model.train_on_batch(inputs, labels))
        group(model)()  # the rest of the warm-up, all batches once
        compile_s[key] = round(time.perf_counter() - start, 1)
    keys = list(models)
    # Every model of every precision in one interleaved loop, so that the
    # ratios between them come from the same minutes of a shared machine.
    times = dict(
        zip(
            keys,
            common.time_interleaved(
                [group(models[key]) for key in keys], args.repeats
            ),
        )
    )
    flops = matmul_flops(
        sizes,
        args.vocabulary,
        args.batch,
        args.source_length,
        args.target_length,
    )
    runs = []
    for precision in precisions:
        peak_dtype = PRECISIONS[precision]
        peak = measure_peak(
            args.backend, args.peak_size, peak_dtype, max(5, args.repeats)
        )
        result = {
            "backend": args.backend,
            "precision": precision,
            "preset": args.preset,
            "sizes": sizes,
            "vocabulary": args.vocabulary,
            "batch": args.batch,
            "source_length": args.source_length,
            "target_length": args.target_length,
            "target_tokens_per_step": tokens / len(batches),
            "steps_per_group": args.steps,
            "repeats": args.repeats,
            "jit_compile_requested": args.jit_compile,
            "jit_compile_resolved": {
                name: bool(getattr(models[precision, name], "jit_compile", 0))
                for name in NAMES
            },
            "parameter_count": counts,
            "first_loss": {n: first_loss[precision, n] for n in NAMES},
            "warmup_s": {n: compile_s[precision, n] for n in NAMES},
        }
        for name in NAMES:
            seconds = times[precision, name]
            median = statistics.median(seconds)
            result[name] = {
                "group_s": [round(t, 4) for t in seconds],
                "median_s": round(median, 4),
                "tokens_per_second_median": round(tokens_per_group / median, 1),
                "gflops_median": round(flops * args.steps / median / 1e9, 1),
            }
            result[name]["fraction_of_peak"] = round(
                result[name]["gflops_median"] / peak, 3
            )
        result["ratio_ours_over_keras_hub"] = round(
            result["ours"]["tokens_per_second_median"]
            / result["keras_hub"]["tokens_per_second_median"],
            3,
        )
        # Speed ratio of each round (keras-hub's time over ours): the two
        # groups of a round share its load, so the spread shows the noise.
        result["ratio_ours_over_keras_hub_paired"] = common.paired_ratios(
            times[precision, "keras_hub"], times[precision, "ours"]
        )
        if precision != precisions[0]:
            base = statistics.median(times[precisions[0], "ours"])
            result["ours_speedup_over_" + precisions[0]] = round(
                base / statistics.median(times[precision, "ours"]), 3
            )
        result["matmul_flops_per_step"] = flops
        result["peak"] = {
            "dtype": peak_dtype,
            "size": args.peak_size,
            "gflops_median": round(peak, 1),
        }
        result["environment"] = common.environment(args.backend)
        runs.append(result)
    return runs


def table(runs):
    rows = []
    for run in runs:
        rows.append(
            [
                run["backend"],
                run.get("precision", "float32"),
                run["preset"],
                f"{run['batch']}x{run['source_length']}->"
                f"{run['target_length']}",
                f"{run['parameter_count']['ours']:,}",
                "yes" if run["jit_compile_resolved"]["ours"] else "no",
                f"{run['ours']['tokens_per_second_median']:,.0f}",
                f"{run['keras_hub']['tokens_per_second_median']:,.0f}",
                f"{run['ratio_ours_over_keras_hub']:.2f}x",
                _paired(run),
                _gflops(run, "ours"),
                _gflops(run, "keras_hub"),
                f"{run['peak']['gflops_median']:,.0f}" if "peak" in run else "",
                _speedup(run),
                run["repeats"],
            ]
        )
    return common.markdown_table(
        [
            "backend",
            "precision",
            "preset",
            "batch",
            "parameters (each)",
            "XLA",
            "ours (target tok/s)",
            "keras-hub (target tok/s)",
            "ours / keras-hub",
            "per round: median (min-max)",
            "ours GFLOP/s (of peak)",
            "keras-hub GFLOP/s (of peak)",
            "peak GFLOP/s",
            "ours speed-up over float32",
            "repeats",
        ],
        rows,
    )


def _paired(run):
    paired = run.get("ratio_ours_over_keras_hub_paired")
    if paired is None:  # results files written before the paired ratios
        return ""
    return f"{paired['median']:.2f}x ({paired['min']:.2f}-{paired['max']:.2f})"


def _speedup(run):
    value = run.get("ours_speedup_over_float32")
    return "" if value is None else f"{value:.2f}x"


def _gflops(run, name):
    if "gflops_median" not in run[name]:
        return ""
    return (
        f"{run[name]['gflops_median']:,.0f} "
        f"({100 * run[name]['fraction_of_peak']:.0f}%)"
    )


def main(argv=None):
    args = parse_args(argv)
    if args.backend:
        runs = run_backend(args)
        if args.json_out:
            common.write_json(args.json_out, runs)
        print(table(runs))
        return
    if args.merge:
        runs = []
        for path in args.merge.split(","):
            with open(path) as f:
                runs.extend(json.load(f))
        write_results(args.output, runs)
        return
    forwarded = []
    skip = {
        "backends",
        "backend",
        "output",
        "json_out",
        "merge",
    }
    for key, value in vars(args).items():
        if key not in skip and value is not None:
            forwarded += ["--" + key.replace("_", "-"), str(value)]
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for backend in args.backends.split(","):
            path = os.path.join(folder, f"{backend}.json")
            backend_runs, wall = common.run_backend_subprocess(
                os.path.abspath(__file__), backend, forwarded, path
            )
            for run in backend_runs:
                run["wall_s"] = round(wall, 1)
            runs.extend(backend_runs)
    write_results(args.output, runs)


def write_results(stem, runs):
    common.write_json(os.path.join(common.RESULTS_DIR, stem + ".json"), runs)
    text = table(runs)
    with open(os.path.join(common.RESULTS_DIR, stem + ".md"), "w") as f:
        f.write("# Transformer training throughput\n\n")
        f.write("Target tokens per second, median of the interleaved ")
        f.write("repetitions; see `benchmarks/README.md`.\n\n")
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
