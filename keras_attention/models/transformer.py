"""The encoder-decoder Transformer of "Attention Is All You Need"."""

import copy
import types

import keras
from keras import ops

from keras_attention.layers.token_and_position_embedding import (
    TokenAndPositionEmbedding,
)
from keras_attention.layers.transformer_decoder_block import (
    TransformerDecoderBlock,
)
from keras_attention.layers.transformer_encoder_block import (
    TransformerEncoderBlock,
)
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

ENCODER_INPUT = "encoder_token_ids"
DECODER_INPUT = "decoder_token_ids"


@keras.saving.register_keras_serializable(package="keras_attention")
class Transformer(keras.Model):
    """Encoder-decoder Transformer with a shared vocabulary and tied weights.

    ```
    source = dropout(embedding(encoder_token_ids))        # (B, S, F)
    for block in encoder_blocks: source = block(source, source_mask)
    target = dropout(embedding(decoder_token_ids))        # (B, T, F)
    for block in decoder_blocks:
        target = block(target, source, target_mask, source_mask)
    logits = target @ transpose(embedding.token_embeddings)  # (B, T, V)
    ```

    One `TokenAndPositionEmbedding` embeds the source and the target and,
    transposed, projects the decoder output to logits: the three-way weight
    tying of section 3.4, with token embeddings scaled by `sqrt(F)`. Source
    and target therefore share one subword vocabulary.

    Token id `0` is padding. The model takes a dict with
    `"encoder_token_ids"` `(B, S)` and `"decoder_token_ids"` `(B, T)` (the
    target shifted right, starting with a start token) and returns logits
    `(B, T, V)` for the next target token at every position. Padding masks
    are computed from the ids; padded positions give finite, meaningless
    logits, which the loss ignores.

    For decoding, `encode`, `initial_cache`, `decode_step` (one token, with
    caches) and `decode` (the whole decoder, no cache) expose the parts;
    `keras_attention.decoding` builds greedy and beam search on them.

    Args:
        vocabulary_size: int. Size of the shared subword vocabulary, `V`.
        num_layers: int. Encoder and decoder blocks each. Defaults to `6`.
        hidden_dim: int. Model width `F` (the paper's `d_model`). Defaults
            to `512`.
        num_heads: int. Attention heads. Defaults to `8`.
        intermediate_dim: int. Feed-forward width (`d_ff`). Defaults to
            `2048`.
        dropout: float. Residual and embedding dropout. Defaults to `0.1`.
        attention_dropout: float. Dropout on attention weights. Defaults to
            `0.0`.
        norm_first: bool. Pre-norm blocks (with a final layer norm after
            each stack) instead of the paper's post-norm. Defaults to
            `False`.
        position: str. `"sinusoidal"` (the paper's default) or
            `"learned"`. Defaults to `"sinusoidal"`.
        max_sequence_length: int. Longest source and target the model
            accepts (learned positions have this many rows). Decoding
            truncates longer sources to it. Defaults to `256`.
        layer_norm_epsilon: float. Defaults to `1e-6`.
        seed: int. Seed for dropout. Defaults to `None`.
        **kwargs: `keras.Model` arguments (`name`, `dtype`).

    Example:

    >>> model = Transformer(vocabulary_size=50, num_layers=1, hidden_dim=16,
    ...                     num_heads=2, intermediate_dim=32)
    >>> logits = model({"encoder_token_ids": keras.ops.ones((2, 7), "int32"),
    ...                 "decoder_token_ids": keras.ops.ones((2, 5), "int32")})
    >>> keras.ops.shape(logits)
    (2, 5, 50)

    From a preset:

    ```python
    model = Transformer.from_preset("small", vocabulary_size=8000)
    model.compile(
        optimizer=keras.optimizers.Adam(
            NoamSchedule(256), beta_1=0.9, beta_2=0.98, epsilon=1e-9
        ),
        loss=LabelSmoothedSparseCategoricalCrossentropy(),
    )
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762).
        - [Press and Wolf, 2017](https://arxiv.org/abs/1608.05859).
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
        norm_first=False,
        position="sinusoidal",
        max_sequence_length=256,
        layer_norm_epsilon=1e-6,
        seed=None,
        dtype=None,
        **kwargs,
    ):
        check_arguments(
            vocabulary_size=vocabulary_size,
            num_layers=num_layers,
            hidden_dim=hidden_dim,
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            dropout=dropout,
            attention_dropout=attention_dropout,
            position=position,
            max_sequence_length=max_sequence_length,
        )

        def seed_at(offset):
            return None if seed is None else seed + 10 * offset

        # === Layers ===
        # Created before the functional graph and assigned afterwards (torch
        # modules take no attributes before their constructor ran).
        token_embedding = TokenAndPositionEmbedding(
            vocabulary_size,
            embedding_dim=hidden_dim,
            sequence_length=max_sequence_length,
            position=position,
            dtype=dtype,
            name="token_embedding",
        )
        encoder_embedding_dropout = keras.layers.Dropout(
            dropout,
            seed=seed_at(1),
            dtype=dtype,
            name="encoder_embedding_dropout",
        )
        decoder_embedding_dropout = keras.layers.Dropout(
            dropout,
            seed=seed_at(2),
            dtype=dtype,
            name="decoder_embedding_dropout",
        )
        block_kwargs = dict(
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            dropout=dropout,
            attention_dropout=attention_dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            norm_first=norm_first,
            dtype=dtype,
        )
        encoder_blocks = [
            TransformerEncoderBlock(
                seed=seed_at(3 + i), name=f"encoder_block_{i}", **block_kwargs
            )
            for i in range(num_layers)
        ]
        decoder_blocks = [
            TransformerDecoderBlock(
                seed=seed_at(3 + num_layers + i),
                name=f"decoder_block_{i}",
                **block_kwargs,
            )
            for i in range(num_layers)
        ]
        encoder_norm = None
        decoder_norm = None
        if norm_first:
            encoder_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=dtype, name="encoder_norm"
            )
            decoder_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=dtype, name="decoder_norm"
            )

        parts = types.SimpleNamespace(
            token_embedding=token_embedding,
            encoder_embedding_dropout=encoder_embedding_dropout,
            decoder_embedding_dropout=decoder_embedding_dropout,
            encoder_blocks=encoder_blocks,
            decoder_blocks=decoder_blocks,
            encoder_norm=encoder_norm,
            decoder_norm=decoder_norm,
        )
        # === Functional model ===
        encoder_ids = keras.Input((None,), dtype="int32", name=ENCODER_INPUT)
        decoder_ids = keras.Input((None,), dtype="int32", name=DECODER_INPUT)
        encoder_outputs, encoder_mask = _encode(parts, encoder_ids, None)
        logits = _decode(parts, decoder_ids, encoder_outputs, encoder_mask)
        super().__init__(
            inputs={ENCODER_INPUT: encoder_ids, DECODER_INPUT: decoder_ids},
            outputs=logits,
            dtype=dtype,
            **kwargs,
        )

        for name, value in vars(parts).items():
            setattr(self, name, value)

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.norm_first = norm_first
        self.position = position
        self.max_sequence_length = max_sequence_length
        self.layer_norm_epsilon = layer_norm_epsilon
        self.seed = seed

    @classmethod
    def from_preset(cls, preset, vocabulary_size, **kwargs):
        """Builds a model with the sizes of a preset.

        Args:
            preset: str. One of `"base"`, `"big"` (the paper's), `"small"`
                or `"tiny"` (for Multi30k on a CPU), `"tiny_4x128"` (the
                published Transformer-tiny sizes for Multi30k: 4 layers of
                width 128, feed-forward 256, 4 heads, dropout 0.3).
            vocabulary_size: int. Size of the shared vocabulary.
            **kwargs: override any constructor argument.
        """
        return model_from_preset(cls, preset, vocabulary_size, kwargs)

    def encode(self, encoder_token_ids):
        """Runs the encoder (inference mode).

        Args:
            encoder_token_ids: int tensor `(B, S)`, `0` = padding.

        Returns:
            `(encoder_outputs, encoder_padding_mask)`: `(B, S, F)` and the
            boolean `(B, S)`.
        """
        encoder_token_ids = ops.convert_to_tensor(encoder_token_ids, "int32")
        return _encode(self, encoder_token_ids, False)

    def decode(self, decoder_token_ids, encoder_outputs, encoder_padding_mask):
        """Runs the whole decoder on `decoder_token_ids` `(B, T)`, no cache.

        Returns logits `(B, T, V)`.
        """
        decoder_token_ids = ops.convert_to_tensor(decoder_token_ids, "int32")
        return _decode(
            self,
            decoder_token_ids,
            encoder_outputs,
            encoder_padding_mask,
            training=False,
        )

    def initial_cache(self, encoder_outputs, max_length):
        """Caches for `decode_step`.

        Args:
            encoder_outputs: `(B, S, F)` from `encode`.
            max_length: int. Number of target positions the self-attention
                cache holds.

        Returns:
            `(self_attention_cache, cross_attention_cache)`: zeros of shape
            `(B, num_layers, 2, max_length, N, H)` and the projected encoder
            outputs, `(B, num_layers, 2, S, N, H)`.
        """
        batch = ops.shape(encoder_outputs)[0]
        head_width = self.hidden_dim // self.num_heads
        cross = [
            block.compute_cross_attention_cache(encoder_outputs)
            for block in self.decoder_blocks
        ]
        cross = ops.stack(cross, axis=1)
        shape = (
            batch,
            self.num_layers,
            2,
            max_length,
            self.num_heads,
            head_width,
        )
        return ops.zeros(shape, dtype=cross.dtype), cross

    def decode_step(
        self,
        token_ids,
        index,
        self_attention_cache,
        cross_attention_cache,
        encoder_padding_mask,
    ):
        """Decodes the tokens at position `index` with the caches.

        Args:
            token_ids: int tensor `(B, 1)`, the tokens at position `index`.
            index: int or scalar int tensor.
            self_attention_cache: `(B, num_layers, 2, L, N, H)`.
            cross_attention_cache: `(B, num_layers, 2, S, N, H)`.
            encoder_padding_mask: boolean `(B, S)`.

        Returns:
            `(logits, self_attention_cache)`: logits `(B, 1, V)` for the next
            token and the updated cache.
        """
        x = self.token_embedding(token_ids, start_index=index)
        caches = []
        for i, block in enumerate(self.decoder_blocks):
            x, cache = block(
                x,
                encoder_padding_mask=encoder_padding_mask,
                self_attention_cache=self_attention_cache[:, i],
                cross_attention_cache=cross_attention_cache[:, i],
                cache_update_index=index,
                training=False,
            )
            caches.append(cache)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        logits = self.token_embedding(x, reverse=True)
        return logits, ops.stack(caches, axis=1)

    def get_config(self):
        return model_config(self)

    @classmethod
    def from_config(cls, config):
        return model_from_config(cls, config)


# The constructor arguments of `Transformer` and `TransformerLanguageModel`
# after `self`, in order; a config holds them and `name` and `dtype`.
ARGUMENTS = (
    "vocabulary_size",
    "num_layers",
    "hidden_dim",
    "num_heads",
    "intermediate_dim",
    "dropout",
    "attention_dropout",
    "norm_first",
    "position",
    "max_sequence_length",
    "layer_norm_epsilon",
    "seed",
)


def check_arguments(
    vocabulary_size,
    num_layers,
    hidden_dim,
    num_heads,
    intermediate_dim,
    dropout,
    attention_dropout,
    position,
    max_sequence_length,
):
    """Validates the sizes and rates shared by the Transformer models."""
    check_positive_int("vocabulary_size", vocabulary_size)
    check_positive_int("num_layers", num_layers)
    check_positive_int("hidden_dim", hidden_dim)
    check_positive_int("num_heads", num_heads)
    check_positive_int("intermediate_dim", intermediate_dim)
    check_positive_int("max_sequence_length", max_sequence_length)
    check_rate("dropout", dropout)
    check_rate("attention_dropout", attention_dropout)
    check_choice("position", position, ("sinusoidal", "learned"))
    if hidden_dim % num_heads:
        raise ValueError(
            "`hidden_dim` must be divisible by `num_heads`. Received: "
            f"hidden_dim={hidden_dim}, num_heads={num_heads}"
        )


def model_from_preset(cls, preset, vocabulary_size, overrides):
    check_choice("preset", preset, tuple(PRESETS))
    config = copy.deepcopy(PRESETS[preset])
    config.update(overrides)
    return cls(vocabulary_size=vocabulary_size, **config)


def model_config(model):
    # Only the constructor arguments: the graph is rebuilt from them.
    config = {name: getattr(model, name) for name in ARGUMENTS}
    config["name"] = model.name
    config["dtype"] = keras.dtype_policies.serialize(model.dtype_policy)
    return config


def model_from_config(cls, config):
    config = dict(config)
    if isinstance(config.get("dtype"), dict):
        config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
    return cls(**config)


# The forward pass, shared by the functional graph (built from the layers
# before the model exists) and by the decoding methods.
def _encode(parts, encoder_token_ids, training):
    # (B, S) -> (B, S, F)
    mask = ops.not_equal(encoder_token_ids, 0)
    x = parts.token_embedding(encoder_token_ids)
    x = parts.encoder_embedding_dropout(x, training=training)
    for block in parts.encoder_blocks:
        x = block(x, padding_mask=mask, training=training)
    if parts.encoder_norm is not None:
        x = parts.encoder_norm(x)
    return x, mask


def _decode(
    parts, decoder_token_ids, encoder_outputs, encoder_mask, training=None
):
    # (B, T) -> (B, T, F) -> (B, T, V)
    mask = ops.not_equal(decoder_token_ids, 0)
    x = parts.token_embedding(decoder_token_ids)
    x = parts.decoder_embedding_dropout(x, training=training)
    for block in parts.decoder_blocks:
        x = block(
            x,
            encoder_outputs,
            padding_mask=mask,
            encoder_padding_mask=encoder_mask,
            training=training,
        )
    if parts.decoder_norm is not None:
        x = parts.decoder_norm(x)
    return parts.token_embedding(x, reverse=True)
