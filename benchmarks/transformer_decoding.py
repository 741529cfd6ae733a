"""Cached vs uncached beam-4 decoding of 30-token outputs, and the GNMT
search (`decoding.beam_search`) against the 0.1 one
(`decoding.search.legacy_beam_search`), both cached.

Usage: python benchmarks/transformer_decoding.py [--backend tensorflow]
    [--preset small] [--batch 16] [--repeats 5] [--jit-compile]

Both runs decode the same sources with the same (randomly initialised)
`small` Transformer, beam 4, alpha 0.6; every hypothesis is forced to 30
tokens (the end id is one the model is never asked to prefer, and the
length limit is source length + 0 = 30). Compiled functions only; the first
call of each (compilation) is not timed; the three runs are interleaved.
`--jit-compile` compiles all three with XLA on tensorflow (the searches'
`jit_compile=True`; jax always uses XLA). Writes
benchmarks/results/transformer_decoding_<backend>_<preset>[_xla].json.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jit-compile", action="store_true")
    args = parser.parse_args()
    common.set_backend(args.backend)
    import keras
    import numpy as np

    from keras_attention import decoding
    from keras_attention.decoding import search
    from keras_attention.models import Transformer

    keras.utils.set_random_seed(0)
    vocabulary = 8000
    model = Transformer.from_preset(args.preset, vocabulary)
    rng = np.random.default_rng(0)
    sources = rng.integers(4, vocabulary, (args.batch, args.length))
    sources = sources.astype("int32")
    end_id = vocabulary - 1

    def run(use_cache, function=decoding.beam_search):
        return function(
            model,
            sources,
            2,
            end_id,
            beam_size=4,
            alpha=0.6,
            max_extra_length=0,
            use_cache=use_cache,
            jit_compile=args.jit_compile,
        )

    legacy = search.legacy_beam_search
    cached = np.asarray(keras.ops.convert_to_numpy(run(True)))
    uncached = np.asarray(keras.ops.convert_to_numpy(run(False)))
    old = np.asarray(keras.ops.convert_to_numpy(run(True, legacy)))
    same = bool(np.array_equal(cached, uncached))
    same_as_legacy = bool(np.array_equal(cached, old))
    lengths = (cached != 0).sum(1)
    times = common.time_interleaved(
        [
            lambda: keras.ops.convert_to_numpy(run(True)),
            lambda: keras.ops.convert_to_numpy(run(False)),
            lambda: keras.ops.convert_to_numpy(run(True, legacy)),
        ],
        args.repeats,
    )
    cached_ms, uncached_ms, legacy_ms = (common.median_ms(t) for t in times)
    result = {
        "backend": args.backend,
        "preset": args.preset,
        "jit_compile": args.jit_compile,
        "batch": args.batch,
        "output_tokens_median": float(np.median(lengths)),
        "beam_size": 4,
        "cached_ms_median": round(cached_ms, 1),
        "uncached_ms_median": round(uncached_ms, 1),
        "speedup": round(uncached_ms / cached_ms, 2),
        "same_outputs": same,
        "legacy_cached_ms_median": round(legacy_ms, 1),
        "gnmt_over_legacy": round(cached_ms / legacy_ms, 3),
        "same_outputs_as_legacy": same_as_legacy,
        "repeats": args.repeats,
        "environment": common.environment(args.backend),
    }
    os.makedirs(common.RESULTS_DIR, exist_ok=True)
    path = os.path.join(
        common.RESULTS_DIR,
        f"transformer_decoding_{args.backend}_{args.preset}"
        f"{'_xla' if args.jit_compile else ''}.json",
    )
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print(
        f"{args.backend}: cached {cached_ms:.0f} ms, uncached "
        f"{uncached_ms:.0f} ms (median of {args.repeats}), speed-up "
        f"{uncached_ms / cached_ms:.1f}x, same outputs: {same}, "
        f"output tokens (median) {np.median(lengths):.0f}; legacy search "
        f"cached {legacy_ms:.0f} ms, GNMT / legacy {cached_ms / legacy_ms:.3f}"
        f" (same outputs: {same_as_legacy})"
    )


if __name__ == "__main__":
    main()
