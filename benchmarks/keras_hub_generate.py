"""Greedy generation: ours against keras-hub's `CausalLM.generate` on the
same decoder-only model and weights, interleaved in one run.

Usage: python benchmarks/keras_hub_generate.py --backend tensorflow
    [--preset tiny] [--batch 8] [--prompt 32] [--new 128] [--repeats 5]

Our `TransformerLanguageModel` (random weights, 8,000 words, learned
positions, post-norm) is rebuilt from keras-hub layers (`ReversibleEmbedding`
tied, `PositionEmbedding`, `TransformerDecoder`) as a `keras_hub.models.
Backbone` under a `CausalLM` whose cached call is GPT-2's, with our
weights copied in; it generates through keras-hub's own `generate` (its
`GreedySampler`, its stacked cache, its compile choice). Both continue
`--batch` random `--prompt`-token prompts by `--new` tokens; the tokens
must be identical (ours runs one more step, the end id its length limit
forces). Also timed: our `sample(top_k=10)` and `sample(top_p=0.9)`.
Writes
benchmarks/results/keras_hub_generate_<backend>_<preset>.{json,md}.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def keras_hub_model(ours):
    import keras
    import keras_hub
    from keras import ops

    f, v = ours.hidden_dim, ours.vocabulary_size
    token_embedding = keras_hub.layers.ReversibleEmbedding(
        v, f, tie_weights=True, name="token_embedding"
    )
    position_embedding = keras_hub.layers.PositionEmbedding(
        ours.max_sequence_length, name="position_embedding"
    )
    blocks = [
        keras_hub.layers.TransformerDecoder(
            ours.intermediate_dim,
            ours.num_heads,
            normalize_first=ours.norm_first,
            layer_norm_epsilon=ours.layer_norm_epsilon,
            name=f"transformer_layer_{i}",
        )
        for i in range(ours.num_layers)
    ]

    def embed(token_ids, start_index=0):
        x = token_embedding(token_ids) * ops.cast(f**0.5, "float32")
        return x + position_embedding(x, start_index=start_index)

    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    padding_mask = keras.Input((None,), dtype="int32", name="padding_mask")
    x = embed(token_ids)
    for block in blocks:
        x = block(x, decoder_padding_mask=padding_mask)
    backbone = keras_hub.models.Backbone(
        inputs={"token_ids": token_ids, "padding_mask": padding_mask},
        outputs=x,
    )
    backbone.token_embedding = token_embedding

    class CausalLM(keras_hub.models.CausalLM):
        def call_with_cache(self, token_ids, cache, cache_update_index):
            x = embed(token_ids, cache_update_index)
            caches = []
            for i, block in enumerate(blocks):
                x, next_cache = block(
                    x,
                    self_attention_cache=cache[:, i, ...],
                    self_attention_cache_update_index=cache_update_index,
                )
                caches.append(next_cache)
            logits = token_embedding(x, reverse=True)
            return logits, x, ops.stack(caches, axis=1)

        def _build_cache(self, token_ids):
            batch, length = ops.shape(token_ids)
            shape = [batch, len(blocks), 2, length, ours.num_heads]
            shape += [f // ours.num_heads]
            cache = ops.zeros(shape, dtype=self.compute_dtype)
            _, hidden_states, cache = self.call_with_cache(token_ids, cache, 0)
            return hidden_states, cache

        generate_step = keras_hub.models.GPT2CausalLM.generate_step

    inputs = backbone.input
    outputs = token_embedding(backbone(inputs), reverse=True)
    model = CausalLM(inputs=inputs, outputs=outputs)
    model.backbone = backbone
    model.preprocessor = None
    model.compile(sampler="greedy")
    # Our weights in.
    ours_embedding = ours.token_embedding
    token_embedding.embeddings.assign(ours_embedding.token_embedding.embeddings)
    position_embedding.position_embeddings.assign(
        ours_embedding.position_embedding.position_embeddings
    )
    for block, our_block in zip(blocks, ours.decoder_blocks):
        block.set_weights(our_block.get_weights())
    return model


def measure(args):
    common.set_backend(args.backend)
    import keras
    import numpy as np

    from keras_attention import decoding
    from keras_attention.models import TransformerLanguageModel

    keras.utils.set_random_seed(0)
    vocabulary, start, end = 8000, 1, 7999
    ours = TransformerLanguageModel.from_preset(
        args.preset,
        vocabulary,
        position="learned",
        max_sequence_length=args.prompt + args.new + 2,
    )
    theirs = keras_hub_model(ours)
    rng = np.random.default_rng(0)
    prompts = rng.integers(4, vocabulary - 1, (args.batch, args.prompt))
    prompts = prompts.astype("int32")
    width = args.prompt + args.new + 1
    hub_ids = np.zeros((args.batch, width), "int32")
    hub_ids[:, 0] = start
    hub_ids[:, 1 : args.prompt + 1] = prompts
    hub_mask = np.zeros((args.batch, width), "int32")
    hub_mask[:, : args.prompt + 1] = 1
    hub_inputs = {"token_ids": hub_ids, "padding_mask": hub_mask}

    # Our searches end every row with the end id at the length limit: one
    # more step, so `--new` tokens come before it.
    def run_ours():
        tokens = decoding.greedy_search(
            ours, prompts, start, end, max_extra_length=args.new + 1
        )
        return np.asarray(keras.ops.convert_to_numpy(tokens))[:, : args.new]

    def run_theirs():
        out = theirs.generate(hub_inputs, stop_token_ids=None)
        return np.asarray(out["token_ids"])[:, args.prompt + 1 :]

    def sampler(**settings):
        def run():
            tokens = decoding.sample(
                ours,
                prompts,
                start,
                end,
                seed=1,
                max_extra_length=args.new,
                **settings,
            )
            return keras.ops.convert_to_numpy(tokens)

        return run

    run_top_k, run_top_p = sampler(top_k=10), sampler(top_p=0.9)
    mine, hub = run_ours(), run_theirs()
    run_top_k(), run_top_p()
    identical = bool(np.array_equal(mine, hub))
    times = common.time_interleaved(
        [run_ours, run_theirs, run_top_k, run_top_p], args.repeats
    )
    return {
        "backend": args.backend,
        "preset": args.preset,
        "environment": common.environment(args.backend),
        "identical_tokens": identical,
        "ours_greedy_ms": common.median_ms(times[0]),
        "keras_hub_greedy_ms": common.median_ms(times[1]),
        "ours_top_k_ms": common.median_ms(times[2]),
        "ours_top_p_ms": common.median_ms(times[3]),
        "speedup": common.paired_ratios(times[1], times[0]),
        "seconds": times,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    r = measure(args)
    markdown = (
        f"# Greedy generation against keras-hub's `CausalLM.generate`, "
        f"{args.backend}, `{args.preset}`\n\n"
        f"Command: `python benchmarks/keras_hub_generate.py "
        f"--backend {args.backend} --preset {args.preset} --batch "
        f"{args.batch} --prompt {args.prompt} --new {args.new} --repeats "
        f"{args.repeats}`\n\n"
        + common.markdown_table(
            ["", "ms (median)"],
            [
                ["ours, greedy", f"{r['ours_greedy_ms']:.0f}"],
                [
                    "keras-hub generate, greedy",
                    f"{r['keras_hub_greedy_ms']:.0f}",
                ],
                ["ours, top-k 10 sampling", f"{r['ours_top_k_ms']:.0f}"],
                ["ours, top-p 0.9 sampling", f"{r['ours_top_p_ms']:.0f}"],
            ],
        )
        + f"\nSpeed-up (paired rounds): {r['speedup']['median']:.2f}x "
        f"({r['speedup']['min']:.2f}-{r['speedup']['max']:.2f}); identical "
        f"greedy tokens: {'yes' if r['identical_tokens'] else 'NO'}.\n"
    )
    common.write_report(
        f"keras_hub_generate_{args.backend}_{args.preset}", r, markdown
    )


if __name__ == "__main__":
    main()
