"""Time to first token with and without prompt prefill, side by side.

Usage: python benchmarks/prefill.py [--backends tensorflow,jax,torch]
    [--preset tiny] [--batch 8] [--prompt 128] [--new 32] [--repeats 7]

A `TransformerLanguageModel` (random weights, 8,000 words) continues
`--batch` prompts of `--prompt` random tokens with greedy search, the
prompt either prefilled (one `decode_step` call over the prompt that
fills the cache, `prefill=True`) or fed one token per step
(`prefill=False`). Time to first token is the time of a search that
stops after one new token (`max_extra_length=1`); both ways run
interleaved, after a warm-up call each (compilation is not timed), on
tensorflow without XLA, jax (jit) and torch (eager), each backend in its
own process. A search of `--new` tokens both ways must give identical
tokens. Writes benchmarks/results/prefill.{json,md}.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def measure(args):
    common.set_backend(args.backend)
    import keras
    import numpy as np

    from keras_attention import decoding
    from keras_attention.models import TransformerLanguageModel

    keras.utils.set_random_seed(0)
    vocabulary = 8000
    model = TransformerLanguageModel.from_preset(
        args.preset,
        vocabulary,
        max_sequence_length=args.prompt + args.new + 8,
    )
    rng = np.random.default_rng(0)
    prompts = rng.integers(4, vocabulary, (args.batch, args.prompt))
    prompts = prompts.astype("int32")

    def run(prefill, new):
        tokens = decoding.greedy_search(
            model, prompts, 1, 2, max_extra_length=new, prefill=prefill
        )
        return np.asarray(keras.ops.convert_to_numpy(tokens))

    same = bool(np.array_equal(run(True, args.new), run(False, args.new)))
    run(True, 1), run(False, 1)  # compile both
    times = common.time_interleaved(
        [lambda: run(True, 1), lambda: run(False, 1)], args.repeats
    )
    ratios = common.paired_ratios(times[1], times[0])
    return {
        "backend": args.backend,
        "environment": common.environment(args.backend),
        "identical_tokens": same,
        "prefill_ms": common.median_ms(times[0]),
        "token_by_token_ms": common.median_ms(times[1]),
        "speedup": ratios,
        "prefill_seconds": times[0],
        "token_by_token_seconds": times[1],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument("--backend")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if args.backend:  # a child process: one backend
        common.write_json(args.json_out, measure(args))
        return
    options = [
        f"--preset={args.preset}",
        f"--batch={args.batch}",
        f"--prompt={args.prompt}",
        f"--new={args.new}",
        f"--repeats={args.repeats}",
    ]
    results = []
    for backend in args.backends.split(","):
        path = os.path.join(common.RESULTS_DIR, f".prefill_{backend}.json")
        result, _ = common.run_backend_subprocess(
            os.path.abspath(__file__), backend, options, path
        )
        os.remove(path)
        results.append(result)
    rows = [
        [
            r["backend"],
            f"{r['prefill_ms']:.1f}",
            f"{r['token_by_token_ms']:.1f}",
            f"{r['speedup']['median']:.1f}x "
            f"({r['speedup']['min']:.1f}-{r['speedup']['max']:.1f})",
            "yes" if r["identical_tokens"] else "NO",
        ]
        for r in results
    ]
    markdown = (
        f"# Prefill: time to first token, `{args.preset}` language model, "
        f"batch {args.batch}, {args.prompt}-token prompts\n\n"
        "Command: `python benchmarks/prefill.py` "
        + " ".join(options)
        + "\n\nMedians of interleaved runs; speedup is the median of the "
        "paired per-round ratios. Identical: the same "
        f"{args.new} greedy tokens both ways.\n\n"
        + common.markdown_table(
            [
                "backend",
                "prefill (ms)",
                "token by token (ms)",
                "speedup",
                "identical tokens",
            ],
            rows,
        )
    )
    report = {"settings": vars(args), "results": results}
    common.write_report("prefill", report, markdown)


if __name__ == "__main__":
    main()
