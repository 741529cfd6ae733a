"""Time and peak memory of blocked and sparse multi-dimensional attention.

Two studies, each configuration measured in its own process (peak resident
memory is a per-process figure):

- `blocked`: `keras_attention.ops.multi_dimensional_attention` forward, batch
  16, 300 features, n = 256, with and without `block_size`; the outputs of
  the two processes are compared (max absolute difference).
- `sparse`: forward + backward of `ReinforcedSelfAttention` with
  `capacity=0.25` (about 25% of the tokens gathered as heads and as
  dependents) against `DirectionalSelfAttention` on the same input, over
  sequence lengths 64..512.

Memory is the growth of the process's peak resident set size (`ru_maxrss`)
over its resident size just before the first call, so it includes the
compiled step's buffers and everything the computation allocates. Times
are medians over `--repeats` compiled steps after one warm-up step.

Usage (from the repository root):

    python benchmarks/resan_efficiency.py --study blocked
    python benchmarks/resan_efficiency.py --study sparse

(`--backends jax,tensorflow` is the default.)

Writes `benchmarks/results/resan_efficiency_<study>.json` and `.md`, and
for `sparse` the plot `resan_efficiency_sparse.png`.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def worker(args):
    common.set_backend(args.backend)
    import keras
    import numpy as np

    from keras_attention import layers
    from keras_attention import ops as ka_ops

    rng = np.random.default_rng(0)
    x = rng.normal(size=(args.batch, args.length, args.features))
    x = x.astype("float32")
    extra = {}
    if args.kind in ("unblocked", "blocked"):
        q = rng.normal(size=x.shape).astype("float32")
        k = rng.normal(size=x.shape).astype("float32")
        block = args.block_size if args.kind == "blocked" else None

        def forward(q, k, v):
            return ka_ops.multi_dimensional_attention(q, k, v, block_size=block)

        step = compile_forward(args.backend, forward, (q, k, x))
    else:
        if args.kind == "resa":
            layer = layers.ReinforcedSelfAttention(
                capacity=args.capacity,
                threshold=0.5,
                seed=0,
                bias_initializer=keras.initializers.Constant(0.0),
            )
        else:
            layer = layers.DirectionalSelfAttention()
        layer.build(x.shape)
        step = compile_train_step(args.backend, layer, x)
    before = rss_bytes()
    start = time.perf_counter()
    result = step()
    extra["first_step_seconds"] = time.perf_counter() - start
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    peak = peak_rss_bytes()
    if args.kind == "resa":
        # After the measurement, so that this eager call cannot raise the
        # baseline.
        _, heads, deps, _ = layer(x, training=True, return_selections=True)
        extra["selection_rate"] = 0.5 * (
            float(np.mean(keras.ops.convert_to_numpy(heads)))
            + float(np.mean(keras.ops.convert_to_numpy(deps)))
        )
    if args.output_npy:
        np.save(args.output_npy, np.asarray(result))
    common.write_json(
        args.json_out,
        {
            "backend": args.backend,
            "kind": args.kind,
            "length": args.length,
            "batch": args.batch,
            "features": args.features,
            "block_size": args.block_size if args.kind == "blocked" else None,
            "median_ms": common.median_ms(times),
            "times_s": times,
            "peak_growth_mb": (peak - before) / 2**20,
            "rss_before_mb": before / 2**20,
            **extra,
        },
    )


def compile_forward(backend, forward, arrays):
    import numpy as np

    if backend == "jax":
        import jax

        fn = jax.jit(forward)
        return lambda: np.asarray(jax.block_until_ready(fn(*arrays)))
    if backend == "tensorflow":
        import tensorflow as tf

        fn = tf.function(forward, jit_compile=False)
        tensors = [tf.constant(a) for a in arrays]
        return lambda: fn(*tensors).numpy()
    import torch

    tensors = [torch.tensor(a) for a in arrays]

    def run():
        with torch.no_grad():
            return forward(*tensors).numpy()

    return run


def compile_train_step(backend, layer, x):
    import keras
    import numpy as np

    # Only the sampling layer has a `training` argument.
    kwargs = {"training": True} if hasattr(layer, "head_sampler") else {}

    if backend == "jax":
        import jax

        trainable = [v.value for v in layer.trainable_variables]
        other = [v.value for v in layer.non_trainable_variables]

        def loss(trainable, other, x):
            out, _ = layer.stateless_call(trainable, other, x, **kwargs)
            return keras.ops.mean(keras.ops.square(out))

        fn = jax.jit(jax.value_and_grad(loss))
        return lambda: float(jax.block_until_ready(fn(trainable, other, x))[0])
    if backend == "tensorflow":
        import tensorflow as tf

        tensor = tf.constant(x)

        @tf.function(jit_compile=False)
        def fn(x):
            with tf.GradientTape() as tape:
                out = layer(x, **kwargs)
                value = tf.reduce_mean(tf.square(out))
            grads = tape.gradient(value, layer.trainable_variables)
            return value, grads

        return lambda: float(fn(tensor)[0].numpy())
    import torch

    tensor = torch.tensor(x)

    def run():
        out = layer(tensor, **kwargs)
        value = torch.mean(out**2)
        params = [v.value for v in layer.trainable_variables]
        torch.autograd.grad(value, params, allow_unused=True)
        return float(value)

    _ = np
    return run


def run_worker(backend, kind, length, args, npy=None):
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "result.json")
        command = [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            "--backend",
            backend,
            "--kind",
            kind,
            "--length",
            str(length),
            "--batch",
            str(args.batch),
            "--features",
            str(args.features),
            "--block-size",
            str(args.block_size),
            "--capacity",
            str(args.capacity),
            "--repeats",
            str(args.repeats),
            "--json-out",
            path,
        ]
        if npy:
            command += ["--output-npy", npy]
        env = dict(os.environ, KERAS_BACKEND=backend)
        subprocess.run(command, env=env, check=True)
        with open(path) as f:
            result = json.load(f)
    print(json.dumps({k: v for k, v in result.items() if k != "times_s"}))
    return result


def study_blocked(args, backends):
    import numpy as np

    rows, results = [], []
    for backend in backends:
        with tempfile.TemporaryDirectory() as directory:
            outputs = {}
            pair = {}
            for kind in ("unblocked", "blocked"):
                outputs[kind] = os.path.join(directory, f"{kind}.npy")
                pair[kind] = run_worker(
                    backend, kind, args.lengths[0], args, outputs[kind]
                )
            difference = float(
                np.max(
                    np.abs(
                        np.load(outputs["blocked"])
                        - np.load(outputs["unblocked"])
                    )
                )
            )
        full, blocked = pair["unblocked"], pair["blocked"]
        memory_ratio = blocked["peak_growth_mb"] / full["peak_growth_mb"]
        time_ratio = blocked["median_ms"] / full["median_ms"]
        results.append(
            {
                "backend": backend,
                "unblocked": full,
                "blocked": blocked,
                "max_abs_difference": difference,
                "memory_ratio": memory_ratio,
                "time_ratio": time_ratio,
            }
        )
        rows.append(
            [
                backend,
                f"{full['median_ms']:.1f}",
                f"{blocked['median_ms']:.1f}",
                f"{time_ratio:.2f}",
                f"{full['peak_growth_mb']:.0f}",
                f"{blocked['peak_growth_mb']:.0f}",
                f"{memory_ratio:.3f}",
                f"{difference:.1e}",
            ]
        )
    table = common.markdown_table(
        [
            "backend",
            "unblocked ms",
            f"blocked ({args.block_size}) ms",
            "time ratio",
            "unblocked peak MB",
            "blocked peak MB",
            "memory ratio",
            "max abs diff",
        ],
        rows,
    )
    return results, table


def study_sparse(args, backends):
    rows, results = [], []
    for backend in backends:
        for length in args.lengths:
            disa = run_worker(backend, "disa", length, args)
            resa = run_worker(backend, "resa", length, args)
            speedup = disa["median_ms"] / resa["median_ms"]
            saving = disa["peak_growth_mb"] / max(resa["peak_growth_mb"], 1e-9)
            results.append(
                {
                    "backend": backend,
                    "length": length,
                    "disa": disa,
                    "resa": resa,
                    "speedup": speedup,
                    "memory_saving": saving,
                }
            )
            rows.append(
                [
                    backend,
                    length,
                    f"{resa['selection_rate']:.3f}",
                    f"{disa['median_ms']:.1f}",
                    f"{resa['median_ms']:.1f}",
                    f"{speedup:.2f}x",
                    f"{disa['peak_growth_mb']:.0f}",
                    f"{resa['peak_growth_mb']:.0f}",
                    f"{saving:.2f}x",
                ]
            )
    table = common.markdown_table(
        [
            "backend",
            "n",
            "ReSA selection",
            "DiSA ms",
            "ReSA ms",
            "speed-up",
            "DiSA peak MB",
            "ReSA peak MB",
            "memory saving",
        ],
        rows,
    )
    plot_sparse(results, backends)
    return results, table


def plot_sparse(results, backends):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for backend in backends:
        rows = [r for r in results if r["backend"] == backend]
        n = [r["length"] for r in rows]
        for kind, style in (("disa", "-o"), ("resa", "--s")):
            label = f"{'DiSA' if kind == 'disa' else 'ReSA 25%'} ({backend})"
            left.plot(
                n, [r[kind]["median_ms"] for r in rows], style, label=label
            )
            right.plot(
                n, [r[kind]["peak_growth_mb"] for r in rows], style, label=label
            )
    for axis, name in ((left, "median step time (ms)"), (right, "peak MB")):
        axis.set_xlabel("sequence length n")
        axis.set_ylabel(name)
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.legend(fontsize=7)
    left.set_title("forward + backward time")
    right.set_title("peak resident memory growth")
    figure.tight_layout()
    figure.savefig(
        os.path.join(common.RESULTS_DIR, "resan_efficiency_sparse.png"), dpi=120
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--study", choices=("blocked", "sparse"))
    parser.add_argument("--backends", default="jax,tensorflow")
    parser.add_argument("--lengths", default=None)
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--features", type=int, default=None)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--capacity", type=float, default=0.25)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--backend")
    parser.add_argument("--kind")
    parser.add_argument("--length", type=int)
    parser.add_argument("--json-out")
    parser.add_argument("--output-npy")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    blocked = args.study == "blocked"
    args.lengths = common.parse_ints(
        args.lengths or ("256" if blocked else "64,128,256,512")
    )
    args.batch = args.batch or (16 if blocked else 8)
    args.features = args.features or (300 if blocked else 128)
    backends = args.backends.split(",")
    study = study_blocked if blocked else study_sparse
    results, table = study(args, backends)
    name = f"resan_efficiency_{args.study}"
    common.write_json(
        os.path.join(common.RESULTS_DIR, f"{name}.json"),
        {
            "study": args.study,
            "command": " ".join(["python"] + sys.argv),
            "batch": args.batch,
            "features": args.features,
            "lengths": args.lengths,
            "repeats": args.repeats,
            "load_average": os.getloadavg(),
            "results": results,
        },
    )
    with open(os.path.join(common.RESULTS_DIR, f"{name}.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
