"""What `Transformer` and `TransformerLanguageModel` share.

The constructor arguments, their checks, the presets, the config, and the
builders of the layers both models hold: the tied embedding, the
embedding dropout, the stacks of blocks and the final pre-norm layer norm.
Every random layer is seeded with `sub_seed(seed, its name)`.
"""

import copy

import keras
from keras import ops

from keras_attention.layers.token_and_position_embedding import (
    TokenAndPositionEmbedding,
)
from keras_attention.losses import RDropLoss
from keras_attention.ops import empty_cache
from keras_attention.ops import from_stacked_cache
from keras_attention.ops import to_stacked_cache
from keras_attention.ops.key_value_cache import is_stacked_cache
from keras_attention.presets import PresetMixin
from keras_attention.presets import is_preset_dir
from keras_attention.utils.seeds import sub_seed
from keras_attention.utils.validation import check_choice
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rate

# Sizes from the paper (table 3) and small sizes for Multi30k on a CPU.
PRESETS = {
    "base": dict(
        num_layers=6,
        hidden_dim=512,
        num_heads=8,
        intermediate_dim=2048,
        dropout=0.1,
    ),
    "big": dict(
        num_layers=6,
        hidden_dim=1024,
        num_heads=16,
        intermediate_dim=4096,
        dropout=0.3,
    ),
    # Multi30k on a CPU: 3 layers of width 256.
    "small": dict(
        num_layers=3,
        hidden_dim=256,
        num_heads=4,
        intermediate_dim=1024,
        dropout=0.1,
    ),
    # The Transformer-tiny configuration published for Multi30k: 4 encoder
    # and 4 decoder layers of width 128, feed-forward 256, 4 heads,
    # dropout 0.3 (the translation application's `--recipe tiny-4x128`
    # adds its shared embeddings, beam 5 and checkpoint averaging).
    "tiny_4x128": dict(
        num_layers=4,
        hidden_dim=128,
        num_heads=4,
        intermediate_dim=256,
        dropout=0.3,
    ),
    # A few minutes of CPU training (the demo).
    "tiny": dict(
        num_layers=2,
        hidden_dim=128,
        num_heads=4,
        intermediate_dim=512,
        dropout=0.1,
    ),
}

# The constructor arguments of both models after `self`, in order; a config
# holds them and `name` and `dtype`.
ARGUMENTS = (
    "vocabulary_size",
    "num_layers",
    "hidden_dim",
    "num_heads",
    "intermediate_dim",
    "dropout",
    "attention_dropout",
    "activation_dropout",
    "norm_first",
    "position",
    "max_sequence_length",
    "layer_norm_epsilon",
    "seed",
)


class TransformerModelBase(PresetMixin, keras.Model):
    """Constructor, presets and config of the Transformer models.

    A subclass defines `_build_parts(arguments, dtype)`, which makes its layers
    (without touching `self`: torch modules take no attributes before their
    constructor ran) and returns them in a namespace, and `_build_graph(parts)`,
    which calls them on `keras.Input`s and returns `(inputs, outputs)`. The
    constructor checks the arguments, builds the functional model from
    them, and then assigns the layers and the arguments to the model.
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers=6,
        hidden_dim=512,
        num_heads=8,
        intermediate_dim=2048,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
        norm_first=False,
        position="sinusoidal",
        max_sequence_length=256,
        layer_norm_epsilon=1e-6,
        seed=None,
        dtype=None,
        **kwargs,
    ):
        arguments = {
            "vocabulary_size": vocabulary_size,
            "num_layers": num_layers,
            "hidden_dim": hidden_dim,
            "num_heads": num_heads,
            "intermediate_dim": intermediate_dim,
            "dropout": dropout,
            "attention_dropout": attention_dropout,
            "activation_dropout": activation_dropout,
            "norm_first": norm_first,
            "position": position,
            "max_sequence_length": max_sequence_length,
            "layer_norm_epsilon": layer_norm_epsilon,
            "seed": seed,
        }
        _check_arguments(arguments)
        parts = self._build_parts(arguments, dtype)
        inputs, outputs = self._build_graph(parts)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        if dtype is not None:
            # A functional model keeps the global policy whatever `dtype`
            # says; the layers were built with `dtype`, and `get_config`
            # must save it, or the reloaded model computes in another one.
            self.dtype_policy = dtype
        for name, value in vars(parts).items():
            setattr(self, name, value)
        for name, value in arguments.items():
            setattr(self, name, value)

    @classmethod
    def from_preset(cls, preset, vocabulary_size=None, **kwargs):
        """Builds a model with the sizes of a preset, or loads a saved one.

        Args:
            preset: str. One of the architecture names `"base"`, `"big"`
                (the paper's), `"small"` or `"tiny"` (for Multi30k on a
                CPU), `"tiny_4x128"` (the published Transformer-tiny sizes
                for Multi30k: 4 layers of width 128, feed-forward 256, 4
                heads, dropout 0.3), which give fresh weights; or a folder
                written by `save_to_preset` (weights and tokenizer
                included; `keras_attention.presets`).
            vocabulary_size: int. Size of the vocabulary; needed with an
                architecture name, read from a preset folder.
            **kwargs: override any constructor argument; with a folder,
                also `load_weights=False` for fresh weights.

        Example:

        ```python
        model = TransformerLanguageModel.from_preset("tiny", 8000)
        model.save_to_preset("my_lm")
        model = TransformerLanguageModel.from_preset("my_lm")
        ```
        """
        if isinstance(preset, str) and preset in PRESETS:
            config = copy.deepcopy(PRESETS[preset])
            config.update(kwargs)
            return cls(vocabulary_size=vocabulary_size, **config)
        if is_preset_dir(preset):
            if vocabulary_size is not None:
                kwargs["vocabulary_size"] = vocabulary_size
            return super().from_preset(preset, **kwargs)
        raise ValueError(
            f"Argument `preset` must be one of {tuple(PRESETS)} or a preset "
            "directory (a folder with a config.json written by "
            f"`save_to_preset`). Received: preset={preset!r}"
        )

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        """`keras.Model.compute_loss`; with a compiled `RDropLoss`, R-Drop.

        In training, a compiled `keras_attention.losses.RDropLoss` runs
        the model a second time on `x` (other dropout masks) and adds the
        divergence between the two passes (`RDropLoss.two_pass_loss`).
        Otherwise the loss is the usual one.
        """
        r_drop = self.loss if isinstance(self.loss, RDropLoss) else None
        if not training or r_drop is None or not r_drop.alpha:
            return super().compute_loss(
                x, y, y_pred, sample_weight, training=training
            )
        second = self(x, training=True)

        def compute_loss(labels, logits, weights):
            return super(TransformerModelBase, self).compute_loss(
                x, labels, logits, weights, training=training
            )

        return r_drop.two_pass_loss(
            compute_loss, y, y_pred, second, sample_weight
        )

    def get_config(self):
        # Only the constructor arguments: the graph is rebuilt from them.
        config = {name: getattr(self, name) for name in ARGUMENTS}
        config["name"] = self.name
        config["dtype"] = keras.dtype_policies.serialize(self.dtype_policy)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    def output_kernel(self):
        """The tied output projection `(F, V)`, for `decode_step(...,
        output_kernel=...)`: the searches compute it once per search
        (`output_kernel` below)."""
        return output_kernel(self)


def token_embedding(arguments, dtype):
    """The one embedding of the tokens, tied to the output projection."""
    return TokenAndPositionEmbedding(
        arguments["vocabulary_size"],
        embedding_dim=arguments["hidden_dim"],
        sequence_length=arguments["max_sequence_length"],
        position=arguments["position"],
        dtype=dtype,
        name="token_embedding",
    )


def embedding_dropout(arguments, dtype, name):
    """The dropout after the embedding, seeded by its name."""
    return keras.layers.Dropout(
        arguments["dropout"],
        seed=sub_seed(arguments["seed"], name),
        dtype=dtype,
        name=name,
    )


def blocks(block_class, prefix, arguments, dtype):
    """`num_layers` blocks named `{prefix}_{i}`, each seeded by its name."""
    return [
        block_class(
            num_heads=arguments["num_heads"],
            intermediate_dim=arguments["intermediate_dim"],
            dropout=arguments["dropout"],
            attention_dropout=arguments["attention_dropout"],
            activation_dropout=arguments["activation_dropout"],
            layer_norm_epsilon=arguments["layer_norm_epsilon"],
            norm_first=arguments["norm_first"],
            seed=sub_seed(arguments["seed"], f"{prefix}_{i}"),
            dtype=dtype,
            name=f"{prefix}_{i}",
        )
        for i in range(arguments["num_layers"])
    ]


def final_norm(arguments, dtype, name):
    """The layer norm after a pre-norm stack; `None` for post-norm."""
    if not arguments["norm_first"]:
        return None
    return keras.layers.LayerNormalization(
        epsilon=arguments["layer_norm_epsilon"], dtype=dtype, name=name
    )


def decode_cached(
    model,
    token_ids,
    index,
    self_attention_cache,
    cross_attention_cache=None,
    encoder_padding_mask=None,
    output_kernel=None,
):
    """Runs the decoder blocks of `model` on new tokens with their caches:
    the work of the models' `decode_step`.

    The caches are tuples of one heads-first `(keys, values)` pair per
    layer (`keras_attention.ops.key_value_cache`): a step writes the new
    tokens' keys and values into each layer's pair, nothing copies the
    whole cache to stack or slice it, and one query attends through batched
    matrix products on the pairs. keras-hub's stacked `(B, num_layers, 2,
    L, N, H)` tensors are accepted too and converted at the boundary; the
    self-attention cache comes back in the layout it came in.

    Args:
        model: a model with `token_embedding`, `decoder_blocks` and
            `decoder_norm`.
        token_ids: int tensor `(B, T)`, the tokens at positions `index, ...`.
        index: int or scalar int tensor.
        self_attention_cache: tuple of `num_layers` pairs, each `(B, N, L,
            H)`, or a stacked `(B, num_layers, 2, L, N, H)`.
        cross_attention_cache: the same with `S` source positions, or
            `None` for decoder-only blocks.
        encoder_padding_mask: boolean `(B, S)`, or `None`.
        output_kernel: the tied output projection `(F, V)` from
            `output_kernel(model)`, computed once before a decoding loop;
            `None` projects through `model.token_embedding` (the same
            logits).

    Returns:
        `(logits, self_attention_cache)`: logits `(B, T, V)` and the
        updated cache.
    """
    stacked = is_stacked_cache(self_attention_cache)
    if stacked:
        self_attention_cache = from_stacked_cache(self_attention_cache)
    if is_stacked_cache(cross_attention_cache):
        cross_attention_cache = from_stacked_cache(cross_attention_cache)
    x = model.token_embedding(token_ids, start_index=index)
    if cross_attention_cache is None:
        cross_attention_cache = (None,) * len(model.decoder_blocks)
    caches = []
    for block, cache, cross in zip(
        model.decoder_blocks, self_attention_cache, cross_attention_cache
    ):
        x, cache = block.decode_step(
            x,
            self_attention_cache=cache,
            cache_update_index=index,
            cross_attention_cache=cross,
            encoder_padding_mask=encoder_padding_mask,
        )
        caches.append(cache)
    if model.decoder_norm is not None:
        x = model.decoder_norm(x)
    if output_kernel is None:
        logits = model.token_embedding(x, reverse=True)
    else:
        logits = ops.matmul(x, ops.cast(output_kernel, x.dtype))
    caches = tuple(caches)
    return logits, to_stacked_cache(caches) if stacked else caches


def empty_self_attention_cache(model, batch_size, max_length, dtype):
    """One empty heads-first pair `(B, N, L, H)` per decoder block."""
    head_width = model.hidden_dim // model.num_heads
    return tuple(
        empty_cache(
            batch_size, model.num_heads, max_length, head_width, dtype=dtype
        )
        for _ in model.decoder_blocks
    )


def output_kernel(model):
    """The transposed token embeddings `(F, V)`, the tied output projection
    of `model`, for `decode_step(..., output_kernel=...)`.

    The reverse call of `TokenAndPositionEmbedding` multiplies by the
    transposed embedding matrix at every call; inside a decoding loop
    that is every step. On tensorflow the product then runs with a
    transposed operand, which took 1.3x the time of the product with the
    matrix transposed beforehand (`(64, 128) @ (128, 8000)` on an AVX-512
    CPU), so the searches transpose it once, before their loop
    (benchmarks/README.md).
    """
    embeddings = model.token_embedding.token_embedding.embeddings
    return ops.transpose(ops.cast(embeddings, model.compute_dtype))


def _check_arguments(arguments):
    for name in (
        "vocabulary_size",
        "num_layers",
        "hidden_dim",
        "num_heads",
        "intermediate_dim",
        "max_sequence_length",
    ):
        check_positive_int(name, arguments[name])
    check_rate("dropout", arguments["dropout"])
    check_rate("attention_dropout", arguments["attention_dropout"])
    check_rate("activation_dropout", arguments["activation_dropout"])
    check_choice("position", arguments["position"], ("sinusoidal", "learned"))
    if arguments["hidden_dim"] % arguments["num_heads"]:
        raise ValueError(
            "`hidden_dim` must be divisible by `num_heads`. Received: "
            f"hidden_dim={arguments['hidden_dim']}, "
            f"num_heads={arguments['num_heads']}"
        )
