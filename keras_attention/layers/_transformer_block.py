"""What the Transformer encoder and decoder blocks share.

`TransformerBlockBase` holds the constructor arguments, the config, the
feed-forward sublayer and the sublayer builders; `residual_sublayer` wires
one sublayer into the residual stream, post-norm (the paper's) or pre-norm:

```
norm_first=False:  x = norm(x + dropout(sublayer(x)))
norm_first=True:   x = x + dropout(sublayer(norm(x)))
```
"""

import keras

from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.utils.aliases import one_of
from keras_attention.utils.initializers import clone_initializer
from keras_attention.utils.seeds import sub_seed
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rate


def residual_sublayer(x, sublayer, norm, dropout, norm_first, training):
    """Applies `sublayer` to `x` with dropout, a residual sum and a norm.

    ```
    norm_first=False:  x = norm(x + dropout(sublayer(x)))
    norm_first=True:   x = x + dropout(sublayer(norm(x)))
    ```

    Args:
        x: float tensor `(B, T, F)`, the residual stream.
        sublayer: callable taking the (normalized, with `norm_first`)
            stream and returning `(output, extra)`: the output `(B, T, F)`
            that joins the stream, and anything else the caller wants back
            (attention weights, a cache), or `None`.
        norm: the `LayerNormalization` of this sublayer.
        dropout: the residual `Dropout` of this sublayer.
        norm_first: bool. Pre-norm instead of post-norm.
        training: bool. Whether dropout is in effect.

    Returns:
        `(x, extra)`: the new stream `(B, T, F)` and the sublayer's extra.
    """
    residual = x
    if norm_first:
        x = norm(x)
    output, extra = sublayer(x)
    x = residual + dropout(output, training=training)
    if not norm_first:
        x = norm(x)
    return x, extra


class TransformerBlockBase(keras.layers.Layer):
    """Constructor, feed-forward sublayer and config shared by the encoder
    and decoder blocks; see `TransformerEncoderBlock` for the arguments.

    Every random sublayer gets its seed from `sub_seed(seed, name)`, its
    own name, so no two draw the same stream.

    `activation_dropout` (default `0.0`) drops units of the feed-forward
    network's inner activation, `dense_2(dropout(relu(dense_1(x))))`
    (fairseq's `--activation-dropout`), beside the residual `dropout` and
    the `attention_dropout` on the attention weights. At `0.0` the block
    holds no such layer, so its weights and random streams are those of a
    block without the argument.
    """

    # Keyword-only: keras-hub's blocks take `(intermediate_dim, num_heads)`
    # positionally, in the other order, so a positional port must fail
    # (`keras_attention.compat.keras_hub` takes keras-hub's order).
    def __init__(
        self,
        *,
        num_heads,
        intermediate_dim,
        key_dim=None,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
        activation="relu",
        layer_norm_epsilon=1e-6,
        norm_first=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        normalize_first=None,
        **kwargs,
    ):
        # `normalize_first` is keras-hub's name; `norm_first` is stored.
        norm_first = one_of(
            "norm_first", norm_first, "normalize_first", normalize_first, False
        )
        check_positive_int("num_heads", num_heads)
        check_positive_int("intermediate_dim", intermediate_dim)
        check_positive_int("key_dim", key_dim, allow_none=True)
        check_rate("dropout", dropout)
        check_rate("attention_dropout", attention_dropout)
        check_rate("activation_dropout", activation_dropout)
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.key_dim = key_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation_dropout = activation_dropout
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.norm_first = norm_first
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.seed = seed
        self.supports_masking = True

    @property
    def normalize_first(self):
        """keras-hub's name for `norm_first`."""
        return self.norm_first

    def _head_width(self, hidden_dim):
        if self.key_dim is not None:
            return self.key_dim
        if hidden_dim is None or hidden_dim % self.num_heads:
            raise ValueError(
                "Without `key_dim`, the input width must be divisible by "
                f"`num_heads`. Received: input width {hidden_dim}, "
                f"num_heads={self.num_heads}"
            )
        return hidden_dim // self.num_heads

    def _attention(self, name, key_dim):
        return MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=key_dim,
            dropout=self.attention_dropout,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            seed=sub_seed(self.seed, name),
            dtype=self.dtype_policy,
            name=name,
        )

    def _norm(self, name):
        return keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name=name,
        )

    def _dropout(self, name):
        return keras.layers.Dropout(
            self.dropout,
            seed=sub_seed(self.seed, name),
            dtype=self.dtype_policy,
            name=name,
        )

    def _dense(self, units, name, activation=None):
        return keras.layers.Dense(
            units,
            activation=activation,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
        )

    def _build_feedforward(self, inputs_shape, norm_last=False):
        # `norm_last` only moves the norm's weights after the dense layers'
        # in `weights` (keras-hub's decoder order); the norm's initial
        # values are constants, so no random draw changes.
        hidden_dim = inputs_shape[-1]
        if not norm_last:
            self.feedforward_norm = self._norm("feedforward_norm")
            self.feedforward_norm.build(inputs_shape)
        self.feedforward_intermediate_dense = self._dense(
            self.intermediate_dim,
            "feedforward_intermediate_dense",
            activation=self.activation,
        )
        self.feedforward_intermediate_dense.build(inputs_shape)
        self.feedforward_output_dense = self._dense(
            hidden_dim, "feedforward_output_dense"
        )
        self.feedforward_output_dense.build(
            tuple(inputs_shape[:-1]) + (self.intermediate_dim,)
        )
        if norm_last:
            self.feedforward_norm = self._norm("feedforward_norm")
            self.feedforward_norm.build(inputs_shape)
        self.feedforward_dropout = self._dropout("feedforward_dropout")
        self.feedforward_activation_dropout = None
        if self.activation_dropout > 0.0:
            name = "feedforward_activation_dropout"
            self.feedforward_activation_dropout = keras.layers.Dropout(
                self.activation_dropout,
                seed=sub_seed(self.seed, name),
                dtype=self.dtype_policy,
                name=name,
            )

    def _residual(self, name, x, sublayer, training):
        """`residual_sublayer` with the norm `{name}_norm` and the dropout
        `{name}_dropout` of this block."""
        return residual_sublayer(
            x,
            sublayer,
            getattr(self, f"{name}_norm"),
            getattr(self, f"{name}_dropout"),
            self.norm_first,
            training,
        )

    def _feedforward(self, x, training):
        def feedforward(x):
            # (B, T, F) -> (B, T, intermediate_dim) -> (B, T, F)
            x = self.feedforward_intermediate_dense(x)
            if self.feedforward_activation_dropout is not None:
                x = self.feedforward_activation_dropout(x, training=training)
            return self.feedforward_output_dense(x), None

        x, _ = self._residual("feedforward", x, feedforward, training)
        return x

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "key_dim": self.key_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "activation_dropout": self.activation_dropout,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "norm_first": self.norm_first,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "seed": self.seed,
            }
        )
        return config
