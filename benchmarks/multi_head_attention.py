"""Forward+backward time of our MultiHeadAttention vs keras's, per backend.

Both layers get the same weights and the same input; their outputs are
checked to match before anything is timed. Each step is a compiled
forward+backward pass (loss = mean of squared outputs, gradients w.r.t. the
trainable weights and the input):

- jax: `jax.jit(jax.value_and_grad(...))` over `layer.stateless_call`.
- tensorflow: `tf.function(jit_compile=...)` around a `tf.GradientTape`.
- torch: eager autograd (`torch.autograd.grad`), no `torch.compile`.

After a warm-up (compilation) the two layers are timed round-robin
(ours, keras, ours, keras, ...) and the medians are reported.

Usage:

    python benchmarks/multi_head_attention.py            # all backends
    python benchmarks/multi_head_attention.py --backend jax --lengths 64

Without `--backend` the script runs itself once per backend, each in its own
process (keras can only use one backend per process), and writes
`benchmarks/results/multi_head_attention.{json,md}`.
"""

import argparse
import math
import os
import sys
import tempfile
import time

import numpy as np
from common import BACKENDS
from common import RESULTS_DIR
from common import environment
from common import markdown_table
from common import median_ms
from common import parse_ints
from common import run_backend_subprocess
from common import set_backend
from common import time_interleaved
from common import write_json

NUM_HEADS = 8
KEY_DIM = 64
WIDTH = NUM_HEADS * KEY_DIM  # 512
TOLERANCE = 1e-4
NAMES = ("ours", "keras")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        help="Benchmark one backend in this process. Default: run every "
        "backend in its own subprocess and merge the results.",
    )
    parser.add_argument(
        "--backends",
        default=",".join(BACKENDS),
        help="Driver mode: comma-separated backends to run.",
    )
    parser.add_argument("--lengths", default="64,256,1024")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="Timed steps per layer and length. Default: enough for about "
        "--seconds-per-length of timing, at least --min-repeats.",
    )
    parser.add_argument("--seconds-per-length", type=float, default=20.0)
    parser.add_argument("--min-repeats", type=int, default=5)
    parser.add_argument("--max-repeats", type=int, default=50)
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="Untimed steps per layer and length (the first compiles).",
    )
    parser.add_argument(
        "--tf-jit-compile",
        choices=("true", "false"),
        default="false",
        help="`jit_compile` of the tf.function, the same for both layers. "
        "Default: false, as keras's own `jit_compile='auto'` on a CPU-only "
        "machine, and faster here at lengths 256 and 1024.",
    )
    parser.add_argument(
        "--causal",
        action="store_true",
        help="Pass use_causal_mask=True to both layers.",
    )
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument(
        "--output",
        default=None,
        help="Driver mode: path stem of the results files. Default: "
        "benchmarks/results/multi_head_attention[_causal].",
    )
    parser.add_argument("--json-out", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------
# One backend, in this process.


def build_layers(seed):
    import keras

    from keras_attention.layers import MultiHeadAttention

    keras.utils.set_random_seed(seed)
    theirs = keras.layers.MultiHeadAttention(
        num_heads=NUM_HEADS, key_dim=KEY_DIM
    )
    ours = MultiHeadAttention(num_heads=NUM_HEADS, key_dim=KEY_DIM)
    shape = (None, None, WIDTH)
    theirs.build(shape, shape)
    ours.build(shape, shape)
    weights = theirs.get_weights()
    ours.set_weights(weights)
    for a, b in zip(ours.get_weights(), weights):
        np.testing.assert_array_equal(a, b)
    return ours, theirs


def check_outputs(ours, theirs, x, causal):
    from keras import ops

    outputs = [
        ops.convert_to_numpy(
            layer(x, x, training=False, use_causal_mask=causal)
        )
        for layer in (ours, theirs)
    ]
    np.testing.assert_allclose(
        outputs[0], outputs[1], rtol=TOLERANCE, atol=TOLERANCE
    )
    return float(np.max(np.abs(outputs[0] - outputs[1])))


def jax_step(layer, x_np, causal, options):
    import jax
    import jax.numpy as jnp

    trainable = [v.value for v in layer.trainable_variables]
    non_trainable = [v.value for v in layer.non_trainable_variables]
    x = jnp.asarray(x_np)

    def loss_fn(trainable, x, non_trainable):
        y, _ = layer.stateless_call(
            trainable,
            non_trainable,
            x,
            x,
            training=True,
            use_causal_mask=causal,
        )
        return jnp.mean(jnp.square(y))

    fn = jax.jit(jax.value_and_grad(loss_fn, argnums=(0, 1)))

    def step():
        loss, grads = fn(trainable, x, non_trainable)
        jax.block_until_ready((loss, grads))
        return float(loss)

    return step


def tensorflow_step(layer, x_np, causal, options):
    import tensorflow as tf

    # Each length builds new tf.functions, on purpose; don't warn about it.
    tf.get_logger().setLevel("ERROR")
    x = tf.constant(x_np)
    variables = list(layer.trainable_variables)

    @tf.function(jit_compile=options["tf_jit_compile"])
    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, x, training=True, use_causal_mask=causal)
            loss = tf.reduce_mean(tf.square(y))
        grads = tape.gradient(loss, variables + [x])
        return loss, grads

    def step():
        loss, grads = fn(x)
        # Eager execution on the CPU is synchronous: once the function call
        # returns, every output (the gradients too) has been computed.
        return float(loss.numpy())

    return step


def torch_step(layer, x_np, causal, options):
    import torch

    x = torch.tensor(x_np, requires_grad=True)
    params = [v.value for v in layer.trainable_variables]

    def step():
        y = layer(x, x, training=True, use_causal_mask=causal)
        loss = torch.mean(torch.square(y))
        grads = torch.autograd.grad(loss, params + [x])
        del grads
        return float(loss)

    return step


STEP_BUILDERS = {
    "jax": jax_step,
    "tensorflow": tensorflow_step,
    "torch": torch_step,
}


def run_one_backend(args):
    set_backend(args.backend)
    import keras

    assert keras.backend.backend() == args.backend, keras.backend.backend()
    options = {"tf_jit_compile": args.tf_jit_compile == "true"}
    lengths = parse_ints(args.lengths)
    ours, theirs = build_layers(args.seed)
    rng = np.random.default_rng(args.seed)
    builder = STEP_BUILDERS[args.backend]
    start_all = time.perf_counter()
    results = []
    for length in lengths:
        start = time.perf_counter()
        x = rng.standard_normal((args.batch, length, WIDTH))
        x = x.astype("float32")
        max_diff = check_outputs(ours, theirs, x, args.causal)
        steps = [
            builder(layer, x, args.causal, options) for layer in (ours, theirs)
        ]
        # Warm-up: the first call compiles. Losses must agree too.
        losses = []
        warmup_s = []
        for step in steps:
            t0 = time.perf_counter()
            for _ in range(max(1, args.warmup)):
                loss = step()
            warmup_s.append(time.perf_counter() - t0)
            losses.append(loss)
        loss_diff = abs(losses[0] - losses[1]) / max(abs(losses[1]), 1e-30)
        if loss_diff > TOLERANCE:
            raise AssertionError(
                f"Losses differ at length {length}: ours={losses[0]}, "
                f"keras={losses[1]}"
            )
        repeats = args.repeats
        times = [[] for _ in steps]
        if repeats is None:
            # The first timed round also sizes the number of repeats.
            times = time_interleaved(steps, 1)
            round_s = sum(t[0] for t in times)
            repeats = math.ceil(args.seconds_per_length / max(round_s, 1e-6))
            repeats = min(max(repeats, args.min_repeats), args.max_repeats)
        more = time_interleaved(
            steps, repeats - len(times[0]), first_round=len(times[0])
        )
        times = [a + b for a, b in zip(times, more)]
        ours_ms, keras_ms = (median_ms(t) for t in times)
        row = {
            "length": length,
            "ours_ms": round(ours_ms, 3),
            "keras_ms": round(keras_ms, 3),
            "ratio": round(ours_ms / keras_ms, 4),
            "repeats": repeats,
            "ours_min_ms": round(1000 * min(times[0]), 3),
            "keras_min_ms": round(1000 * min(times[1]), 3),
            "ours_all_ms": [round(1000 * t, 2) for t in times[0]],
            "keras_all_ms": [round(1000 * t, 2) for t in times[1]],
            "warmup_s": {n: round(s, 2) for n, s in zip(NAMES, warmup_s)},
            "max_abs_output_diff": max_diff,
            "loss_rel_diff": loss_diff,
            "seconds": round(time.perf_counter() - start, 1),
            "load_average_1min": round(os.getloadavg()[0], 2),
        }
        results.append(row)
        print(
            f"[{args.backend}] length {length}: ours {ours_ms:.1f} ms, "
            f"keras {keras_ms:.1f} ms, ratio {ours_ms / keras_ms:.3f} "
            f"({repeats} repeats, {row['seconds']} s)",
            flush=True,
        )
    return {
        "backend": args.backend,
        "mode": describe_mode(args),
        "results": results,
        "seconds": round(time.perf_counter() - start_all, 1),
        "environment": environment(args.backend),
    }


def describe_mode(args):
    if args.backend == "jax":
        return "jax.jit(value_and_grad(stateless_call))"
    if args.backend == "tensorflow":
        return (
            f"tf.function(jit_compile={args.tf_jit_compile == 'true'}) "
            "+ GradientTape"
        )
    return "torch eager autograd (no torch.compile)"


# ---------------------------------------------------------------------------
# Driver: one subprocess per backend.


def forwarded_args(args):
    forwarded = [
        "--lengths",
        args.lengths,
        "--batch",
        str(args.batch),
        "--seconds-per-length",
        str(args.seconds_per_length),
        "--min-repeats",
        str(args.min_repeats),
        "--max-repeats",
        str(args.max_repeats),
        "--warmup",
        str(args.warmup),
        "--tf-jit-compile",
        args.tf_jit_compile,
        "--seed",
        str(args.seed),
    ]
    if args.repeats is not None:
        forwarded += ["--repeats", str(args.repeats)]
    if args.causal:
        forwarded.append("--causal")
    return forwarded


def table_rows(runs):
    rows = []
    for run in runs:
        for r in run["results"]:
            rows.append(
                (
                    run["backend"],
                    r["length"],
                    f"{r['ours_ms']:.1f}",
                    f"{r['keras_ms']:.1f}",
                    f"{r['ratio']:.3f}",
                )
            )
    return rows


HEADERS = ("backend", "length", "ours ms", "keras ms", "ratio ours/keras")


def run_driver(args):
    script = os.path.abspath(__file__)
    backends = [b for b in args.backends.split(",") if b]
    runs = []
    walls = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in backends:
            print(f"=== {backend} ===", flush=True)
            path = os.path.join(tmp, f"{backend}.json")
            run, wall = run_backend_subprocess(
                script, backend, forwarded_args(args), path
            )
            run["process_seconds"] = round(wall, 1)
            walls[backend] = wall
            runs.append(run)
    config = {
        "batch": args.batch,
        "num_heads": NUM_HEADS,
        "key_dim": KEY_DIM,
        "width": WIDTH,
        "lengths": parse_ints(args.lengths),
        "self_attention": True,
        "use_causal_mask": args.causal,
        "dtype": "float32",
        "loss": "mean(square(output)); grads w.r.t. weights and input",
        "tf_jit_compile": args.tf_jit_compile == "true",
        "torch_compile": False,
        "timing": "medians of interleaved steps (ours, keras, ...)",
    }
    data = {
        "benchmark": "multi_head_attention",
        "config": config,
        "backends": {run["backend"]: run for run in runs},
    }
    stem = args.output or os.path.join(
        RESULTS_DIR,
        "multi_head_attention" + ("_causal" if args.causal else ""),
    )
    write_json(stem + ".json", data)
    table = markdown_table(HEADERS, table_rows(runs))
    title = (
        f"MultiHeadAttention forward+backward, batch {args.batch}, "
        f"{NUM_HEADS} heads, width {WIDTH}, "
        + ("causal " if args.causal else "")
        + "self-attention, float32."
    )
    modes = "\n".join(f"- {run['backend']}: {run['mode']}" for run in runs)
    cpus = runs[0]["environment"]["cpu_count"] if runs else None
    with open(stem + ".md", "w") as f:
        f.write(f"{title}\n\n{table}\nCompiled as:\n{modes}\n\n")
        f.write(f"CPU count: {cpus}.\n")
    print()
    print(title)
    print(table)
    for backend, wall in walls.items():
        print(f"{backend}: {wall:.0f} s")


def main(argv=None):
    args = parse_args(argv)
    if args.backend is None:
        run_driver(args)
        return
    run = run_one_backend(args)
    if args.json_out:
        write_json(args.json_out, run)
    else:
        print(markdown_table(HEADERS, table_rows([run])))


if __name__ == "__main__":
    sys.exit(main())
