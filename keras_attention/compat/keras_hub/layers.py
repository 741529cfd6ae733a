"""`keras_hub.layers` names, signatures and defaults on our layers.

Each class here is one of `keras_attention.layers` with keras-hub 0.32's
constructor: its argument order (so `TransformerDecoder(64, 4)` is
`intermediate_dim=64, num_heads=4`, as there), its defaults and its
meaning of each argument. Call arguments, return structures and public
attributes are those of the layer underneath, which accepts keras-hub's
names too (`tests/layers/keras_hub_compat_test.py` holds both to keras-hub's
installed classes). Our own arguments still pass through as keywords
(`key_dim`, `seed`, `attention_dropout`, ...).

| keras-hub | here | underneath |
|---|---|---|
| `TransformerEncoder` | subclass | `TransformerEncoderBlock` |
| `TransformerDecoder` | subclass | `TransformerDecoderBlock` |
| `TokenAndPositionEmbedding` | subclass | `TokenAndPositionEmbedding` |
| `PositionEmbedding` | the same class | `PositionEmbedding` |
| `SinePositionEncoding` | the same class | `SinusoidalPositionEncoding` |
"""

import keras

from keras_attention import layers

PACKAGE = "keras_attention.compat.keras_hub"

# Same signature and meaning as keras-hub's: the classes themselves.
PositionEmbedding = layers.PositionEmbedding
SinePositionEncoding = layers.SinusoidalPositionEncoding


class KerasHubBlock:
    """keras-hub's constructor and config for our Transformer blocks.

    Mixed in before `TransformerEncoderBlock` or `TransformerDecoderBlock`:
    keras-hub's arguments in its order and with its defaults. Its one
    `dropout` also drops attention weights (`attention_dropout` defaults to
    `dropout`), its `normalize_first` is our `norm_first`, and the input
    shapes its decoder writes into its config (`config_shapes`) build the
    layer.
    """

    config_shapes = ()

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        dropout=0,
        activation="relu",
        layer_norm_epsilon=1e-05,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        normalize_first=False,
        **kwargs,
    ):
        shapes = [kwargs.pop(name, None) for name in self.config_shapes]
        kwargs.setdefault("attention_dropout", dropout)
        super().__init__(
            intermediate_dim=intermediate_dim,
            num_heads=num_heads,
            dropout=dropout,
            activation=activation,
            layer_norm_epsilon=layer_norm_epsilon,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            normalize_first=normalize_first,
            **kwargs,
        )
        if shapes and shapes[0]:
            self.build(*shapes)

    def get_config(self):
        config = super().get_config()
        config["normalize_first"] = config.pop("norm_first")
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class TransformerEncoder(KerasHubBlock, layers.TransformerEncoderBlock):
    """`TransformerEncoderBlock` with keras-hub's constructor.

    `keras_hub.layers.TransformerEncoder`'s arguments, in its order and
    with its defaults: no dropout, `layer_norm_epsilon=1e-5`, post-norm,
    and one `dropout` rate for the residual and the attention weights
    (`attention_dropout` defaults to `dropout`).

    Args:
        intermediate_dim: int. Width of the feed-forward hidden layer.
        num_heads: int. Number of attention heads.
        dropout: float. Dropout rate of the residual branches and, unless
            `attention_dropout` is given, of the attention weights.
            Defaults to `0`.
        activation: feed-forward activation. Defaults to `"relu"`.
        layer_norm_epsilon: float. Defaults to `1e-5`.
        kernel_initializer: Defaults to `"glorot_uniform"`.
        bias_initializer: Defaults to `"zeros"`.
        normalize_first: bool. Pre-norm. Defaults to `False`.
        **kwargs: `TransformerEncoderBlock`'s other arguments and base
            layer arguments.

    Example:

    >>> encoder = TransformerEncoder(16, 2)
    >>> keras.ops.shape(encoder(keras.ops.ones((2, 5, 8))))
    (2, 5, 8)
    """


@keras.saving.register_keras_serializable(package=PACKAGE)
class TransformerDecoder(KerasHubBlock, layers.TransformerDecoderBlock):
    """`TransformerDecoderBlock` with keras-hub's constructor.

    `keras_hub.layers.TransformerDecoder`'s arguments, in its order and
    with its defaults, as for `TransformerEncoder` here. A config written
    by keras-hub's layer (with `decoder_sequence_shape` and
    `encoder_sequence_shape`) builds the layer as keras-hub's does.

    Args: those of `TransformerEncoder` here; `**kwargs` takes
    `TransformerDecoderBlock`'s other arguments and base layer arguments.

    Example:

    >>> decoder = TransformerDecoder(16, 2)
    >>> x = keras.ops.ones((2, 5, 8))
    >>> keras.ops.shape(decoder(decoder_sequence=x))
    (2, 5, 8)
    """

    config_shapes = ("decoder_sequence_shape", "encoder_sequence_shape")


@keras.saving.register_keras_serializable(package=PACKAGE)
class TokenAndPositionEmbedding(layers.TokenAndPositionEmbedding):
    """`TokenAndPositionEmbedding` with keras-hub's constructor.

    `keras_hub.layers.TokenAndPositionEmbedding`'s arguments, in its order
    and with its defaults, and its arithmetic: learned positions
    (`position="learned"`) and unscaled token embeddings
    (`scale_embeddings=False`).

    Args:
        vocabulary_size: int. Number of token ids.
        sequence_length: int. Number of learned positions.
        embedding_dim: int. Embedding width.
        tie_weights: bool. Reverse with the transposed token table.
            Defaults to `True`.
        embeddings_initializer: initializer of the token table. Defaults to
            `"uniform"`.
        mask_zero: bool. Token id 0 is padding. Defaults to `False`.
        **kwargs: `TokenAndPositionEmbedding`'s other arguments and base
            layer arguments.

    Example:

    >>> embedding = TokenAndPositionEmbedding(100, 16, 8)
    >>> keras.ops.shape(embedding(keras.ops.ones((2, 5), dtype="int32")))
    (2, 5, 8)
    """

    def __init__(
        self,
        vocabulary_size,
        sequence_length,
        embedding_dim,
        tie_weights=True,
        embeddings_initializer="uniform",
        mask_zero=False,
        **kwargs,
    ):
        kwargs.setdefault("position", "learned")
        kwargs.setdefault("scale_embeddings", False)
        super().__init__(
            vocabulary_size,
            sequence_length=sequence_length,
            embedding_dim=embedding_dim,
            tie_weights=tie_weights,
            embeddings_initializer=embeddings_initializer,
            mask_zero=mask_zero,
            **kwargs,
        )


__all__ = [
    "PositionEmbedding",
    "SinePositionEncoding",
    "TokenAndPositionEmbedding",
    "TransformerDecoder",
    "TransformerEncoder",
]
