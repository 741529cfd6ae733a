"""The GNMT search's choice of the 2K best extensions: all `K * V` scores
and one `ops.top_k` against the blocks that `decoding.search` takes
(`beam.extensions_in_one_top_k` and `beam.best_extensions`), on
the shapes the search sees.

Usage: python benchmarks/top_k.py [--backend tensorflow] [--batch 16]
    [--beam 4] [--vocabulary 8000] [--steps 30] [--repeats 9]

At every step the search takes, for each of B sentences, the 2K best
one-token extensions of its K live hypotheses: the score of hypothesis h
extended by token v is `alive[h] + (logits[h, v] - log_sum_exp(logits[h]))`.
The defaults are beam 4 over the `small`/`tiny` presets' 8,000 words,
batch 16, 30 steps (the decoding benchmark's setting). Both ways run the
same `steps` calls inside one compiled loop (`tf.function` / `jax.jit`;
eager on torch), alternated, first call not timed; the median is
reported. Before timing, the two are checked to give the same scores,
hypotheses and tokens on every step's input (hypotheses and tokens skipped
on torch, whose `topk` leaves the order of ties unspecified). Writes
benchmarks/results/top_k_<backend>.json.
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

    from keras_attention.decoding import beam

    k = 2 * args.beam
    width = beam.block_width(args.vocabulary, 2)
    rng = np.random.default_rng(0)
    shape = (args.steps, args.batch, args.beam, args.vocabulary)
    logits = (4 * rng.normal(size=shape)).astype("float32")
    normalizers = np.log(np.exp(logits).sum(-1, keepdims=True))
    alive = -rng.uniform(1, 20, size=shape[:3]).astype("float32")
    inputs = [ops.convert_to_tensor(x) for x in (logits, normalizers, alive)]

    def plain(*step_inputs):
        return beam.extensions_in_one_top_k(*step_inputs, k)

    def blocked(*step_inputs):
        # The blocks, where they pay (every case this benchmark runs).
        return beam.best_extensions(*step_inputs, k)

    for step in range(args.steps):
        step_inputs = [x[step] for x in inputs]
        expected = [ops.convert_to_numpy(t) for t in plain(*step_inputs)]
        got = [ops.convert_to_numpy(t) for t in blocked(*step_inputs)]
        checked = 1 if args.backend == "torch" else 3
        for a, b in zip(expected[:checked], got[:checked]):
            if not np.array_equal(a, b):
                raise AssertionError(f"the two ways differ at step {step}")

    plain_loop = _compiled_loop(args.backend, plain, args.steps)
    blocked_loop = _compiled_loop(args.backend, blocked, args.steps)
    for loop in (plain_loop, blocked_loop):
        ops.convert_to_numpy(loop(*inputs))
    times = common.time_interleaved(
        [
            lambda: ops.convert_to_numpy(plain_loop(*inputs)),
            lambda: ops.convert_to_numpy(blocked_loop(*inputs)),
        ],
        args.repeats,
    )
    plain_ms = common.median_ms(times[0])
    blocked_ms = common.median_ms(times[1])
    result = {
        "backend": args.backend,
        "batch": args.batch,
        "beam": args.beam,
        "vocabulary": args.vocabulary,
        "k": k,
        "block_width": width,
        "steps": args.steps,
        "one_top_k_ms_median": round(plain_ms, 1),
        "blocks_ms_median": round(blocked_ms, 1),
        "one_top_k_over_blocks": common.paired_ratios(times[0], times[1]),
        "same_results": True,
        "repeats": args.repeats,
        "environment": common.environment(args.backend),
    }
    path = os.path.join(common.RESULTS_DIR, f"top_k_{args.backend}.json")
    common.write_json(path, result)
    print(
        f"{args.backend}: {args.steps} choices of the {k} best of "
        f"{args.batch} x {args.beam} x {args.vocabulary} extensions: all "
        f"scores and one top_k {plain_ms:.1f} ms, by blocks of {width} "
        f"{blocked_ms:.1f} ms, ratio "
        f"{result['one_top_k_over_blocks']['median']} (same results)"
    )


def _compiled_loop(backend, choose, steps):
    """`steps` calls of `choose` on the inputs' `[i]` in one compiled
    function; the sum of the scores keeps every call live."""
    from keras import ops

    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function
        def loop(*inputs):
            total = tf.zeros(())
            for i in tf.range(steps):
                total += tf.reduce_sum(choose(*[x[i] for x in inputs])[0])
            return total

        return loop
    if backend == "jax":
        import jax

        @jax.jit
        def loop(*inputs):
            def step(i, total):
                return total + ops.sum(choose(*[x[i] for x in inputs])[0])

            return jax.lax.fori_loop(0, steps, step, 0.0)

        return loop

    def loop(*inputs):
        total = 0.0
        for i in range(steps):
            total = total + ops.sum(choose(*[x[i] for x in inputs])[0])
        return total

    return loop


if __name__ == "__main__":
    main()
