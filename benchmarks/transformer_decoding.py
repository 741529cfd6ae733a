"""Cached vs uncached beam-4 decoding of 30-token outputs, and the GNMT
search (`decoding.beam_search`) against the 0.1 one
(`legacy_search.legacy_beam_search`), both cached.

Usage: python benchmarks/transformer_decoding.py [--backend tensorflow]
    [--preset small] [--batch 16] [--repeats 5] [--jit-compile]

Both runs decode the same sources with the same (randomly initialised)
`small` Transformer, beam 4, alpha 0.6; every hypothesis is forced to 30
tokens (the end id is one the model is never asked to prefer, and the
length limit is source length + 0 = 30). Compiled functions only; the first
call of each (compilation) is not timed; the four runs are interleaved.
A fourth timing runs the cached decoder alone (the same encoding and
cached steps, none of the search's work on the scores): the cached search
less it is the search's own work, which bounds the speed-up any cheaper
decoder step could reach. `--jit-compile` compiles all four with XLA on
tensorflow (the searches' `jit_compile=True`; jax always uses XLA). Writes
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
    import legacy_search  # after the backend is set
    import numpy as np

    from keras_attention import decoding
    from keras_attention.decoding.loop import compile_search
    from keras_attention.models import Transformer
    from keras_attention.models import transformer_base

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

    legacy = legacy_search.legacy_beam_search

    def decoder_steps_factory(model, settings):
        # The cached decoder alone: the same encoding of B * K rows and
        # the same number of cached steps, with none of the search's work
        # on the (B * K, V) scores (no log-softmax, top-k or reordering).
        steps = settings[1]

        def run_steps(encoder_token_ids):
            outputs, mask = model.encode(encoder_token_ids)
            outputs = keras.ops.repeat(outputs, 4, axis=0)
            mask = keras.ops.repeat(mask, 4, axis=0)
            self_cache, cross_cache = model.initial_cache(outputs, steps + 1)
            token = keras.ops.full((keras.ops.shape(outputs)[0], 1), 2, "int32")
            logits = keras.ops.zeros((keras.ops.shape(outputs)[0], vocabulary))
            # The output projection transposed once, as the searches do.
            kernel = transformer_base.output_kernel(model)

            def body(step, self_cache, logits):
                logits, self_cache = model.decode_step(
                    token, step, self_cache, cross_cache, mask, kernel
                )
                return step + 1, self_cache, logits[:, 0]

            _, _, logits = keras.ops.while_loop(
                lambda step, *_: keras.ops.less(step, steps),
                body,
                (keras.ops.convert_to_tensor(0, "int32"), self_cache, logits),
            )
            return logits

        return run_steps

    decoder_steps = compile_search(
        model,
        ("benchmark: cached decoder steps only", args.length),
        decoder_steps_factory,
        jit_compile=args.jit_compile,
    )
    decoder_steps(sources)
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
            lambda: keras.ops.convert_to_numpy(decoder_steps(sources)),
        ],
        args.repeats,
    )
    cached_ms, uncached_ms, legacy_ms, steps_ms = (
        common.median_ms(t) for t in times
    )
    # What the search itself adds to the cached decoder's steps; no cheaper
    # decoder step can take the cached search below it.
    search_ms = cached_ms - steps_ms
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
        "decoder_steps_only_ms_median": round(steps_ms, 1),
        "search_work_ms": round(search_ms, 1),
        "speedup_if_decoder_steps_were_free": round(
            uncached_ms / max(search_ms, 1e-9), 2
        ),
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
        f" (same outputs: {same_as_legacy}); cached decoder steps alone "
        f"{steps_ms:.0f} ms, so the search's own work is {search_ms:.0f} ms "
        f"and caps the speed-up at {uncached_ms / max(search_ms, 1e-9):.1f}x"
        " even with free decoder steps"
    )


if __name__ == "__main__":
    main()
