"""One `ops.top_k` over a whole row against the beam search's block top-k
(`decoding.search._top_k_by_blocks`), on the shape the GNMT search sees.

Usage: python benchmarks/top_k.py [--backend tensorflow] [--batch 16]
    [--beam 4] [--vocabulary 8000] [--steps 30] [--repeats 9]

The search takes the 2K best of B rows of K * V scores at every step; the
defaults are beam 4 over the `small`/`tiny` presets' 8,000 words, batch 16,
30 steps (the decoding benchmark's setting). Both versions run the same
`steps` calls inside one compiled loop (`tf.function` / `jax.jit`; eager on
torch), alternated, first call not timed; the median is reported. Before
timing, the two are checked to give the same scores and indices on every
step's input (indices skipped on torch, whose `topk` leaves the order of
ties unspecified). Writes benchmarks/results/top_k_<backend>.json.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--vocabulary", type=int, default=8000)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    common.set_backend(args.backend)
    import numpy as np
    from keras import ops

    from keras_attention.decoding import search

    size = args.beam * args.vocabulary
    k = 2 * args.beam
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(args.steps, args.batch, size)).astype("float32")
    inputs = ops.convert_to_tensor(rows)

    def plain(x):
        scores, indices = ops.top_k(x, k)
        return scores, ops.cast(indices, "int32")

    blocked = search._top_k_by_blocks
    for step in range(args.steps):
        expected = [ops.convert_to_numpy(t) for t in plain(inputs[step])]
        got = [ops.convert_to_numpy(t) for t in blocked(inputs[step], k)]
        if not np.array_equal(expected[0], got[0]):
            raise AssertionError(f"scores differ at step {step}")
        if args.backend != "torch" and not np.array_equal(expected[1], got[1]):
            raise AssertionError(f"indices differ at step {step}")

    plain_loop = _compiled_loop(args.backend, plain, args.steps)
    blocked_loop = _compiled_loop(
        args.backend, lambda x: blocked(x, k), args.steps
    )
    for loop in (plain_loop, blocked_loop):
        ops.convert_to_numpy(loop(inputs))
    times = common.time_interleaved(
        [
            lambda: ops.convert_to_numpy(plain_loop(inputs)),
            lambda: ops.convert_to_numpy(blocked_loop(inputs)),
        ],
        args.repeats,
    )
    plain_ms = common.median_ms(times[0])
    blocked_ms = common.median_ms(times[1])
    result = {
        "backend": args.backend,
        "batch": args.batch,
        "row_size": size,
        "k": k,
        "block_width": search._block_width(size, k),
        "steps": args.steps,
        "plain_top_k_ms_median": round(plain_ms, 1),
        "block_top_k_ms_median": round(blocked_ms, 1),
        "plain_over_blocked": common.paired_ratios(times[0], times[1]),
        "same_results": True,
        "repeats": args.repeats,
        "environment": common.environment(args.backend),
    }
    path = os.path.join(common.RESULTS_DIR, f"top_k_{args.backend}.json")
    common.write_json(path, result)
    print(
        f"{args.backend}: {args.steps} top-{k} over ({args.batch}, {size}): "
        f"one top_k {plain_ms:.1f} ms, by blocks of "
        f"{result['block_width']} {blocked_ms:.1f} ms, ratio "
        f"{result['plain_over_blocked']['median']} (same results)"
    )


def _compiled_loop(backend, top_k, steps):
    """`steps` calls of `top_k` on `x[i]` in one compiled function; the
    sum of the scores keeps every call live."""
    from keras import ops

    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function
        def loop(x):
            total = tf.zeros(())
            for i in tf.range(steps):
                total += tf.reduce_sum(top_k(x[i])[0])
            return total

        return loop
    if backend == "jax":
        import jax

        @jax.jit
        def loop(x):
            return jax.lax.fori_loop(
                0, steps, lambda i, total: total + ops.sum(top_k(x[i])[0]), 0.0
            )

        return loop

    def loop(x):
        total = 0.0
        for i in range(steps):
            total = total + ops.sum(top_k(x[i])[0])
        return total

    return loop


if __name__ == "__main__":
    main()
