import keras
from keras import ops

from keras_attention.layers._feed_forward import apply_feed_forward
from keras_attention.layers._feed_forward import build_feed_forward
from keras_attention.ops import masked_softmax
from keras_attention.ops import pairwise_mask
from keras_attention.ops.attention import attention_logits
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import check_rate
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class IntraSentenceAttention(keras.layers.Layer):
    """Self-attention within one sentence with a learned distance bias.

    Each token attends to every token of its own sentence. The score is a
    dot product of a feed-forward network's outputs plus a learned scalar
    bias that depends only on the signed distance `i - j`:

    ```
    f = F_intra(inputs)                              # (B, T, H)
    scores = einsum("bih,bjh->bij", f, f)            # (B, T, T), f_ij
    bucket = where(|i - j| > max_distance,
                   2 * max_distance + 1, i - j + max_distance)
    scores = scores + distance_bias[bucket]          # d_{i-j}
    weights = masked_softmax(scores, axis=2)
    attended = einsum("bij,bjf->bif", weights, inputs)   # a'_i
    output = concatenate([inputs, attended], axis=-1)    # [a_i; a'_i]
    ```

    `distance_bias` has `2 * max_distance + 2` entries: one per signed
    distance in `[-max_distance, max_distance]` and one bucket shared by
    every distance beyond (the paper uses `max_distance = 10`). `F_intra`
    is `num_layers` `Dense` layers of `hidden_dim` units with `activation`,
    each followed by dropout.

    Masking: `mask` `(B, T)` comes from the input's Keras mask when not
    given. Padded tokens get exactly zero weight; a padded query row (and
    every row of an empty sentence) gets zero weights and `a'_i = 0`, never
    NaN. Distances count positions, so right padding never changes them.
    The output carries the input's mask.

    Args:
        hidden_dim: int. Width of the layers of `F_intra`. Defaults to
            `200`.
        num_layers: int. Number of layers of `F_intra`. Defaults to `2`.
        max_distance: int, at least 1. Largest distance with a bias of its
            own. Defaults to `10`.
        activation: activation of `F_intra`. Defaults to `"relu"`.
        dropout: float. Dropout rate after each layer of `F_intra`.
            Defaults to `0.2`.
        kernel_initializer: initializer for the kernels of `F_intra`.
            Defaults to `"glorot_uniform"`.
        bias_initializer: initializer for the biases of `F_intra`. Defaults
            to `"zeros"`.
        distance_initializer: initializer for the distance bias. Defaults
            to `"zeros"`.
        seed: int. Seed for the dropout. Defaults to `None`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor of shape `(B, T, F)`.
        mask: optional boolean tensor `(B, T)`, `True` = real token.
        return_attention_scores: bool. Also return the weights.
        training: bool. Whether dropout is in effect.

    Returns:
        `output` of shape `(B, T, 2 * F)`; with
        `return_attention_scores=True`, also the weights `(B, T, T)`.

    Raises:
        ValueError: if `max_distance` is below 1 or not an integer, or if
            the input is not rank 3.

    Example:

    >>> layer = IntraSentenceAttention(hidden_dim=8, max_distance=3)
    >>> x = keras.random.normal((2, 6, 4))
    >>> keras.ops.shape(layer(x))
    (2, 6, 8)

    In a model, one layer shared by both sentences:

    ```python
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(1000, 64)(tokens)
    x = IntraSentenceAttention()(x, mask=keras.ops.not_equal(tokens, 0))
    ```

    References:
        - [Parikh et al., 2016](https://arxiv.org/abs/1606.01933),
          section 3.4 (Intra-Sentence Attention).
    """

    def __init__(
        self,
        hidden_dim=200,
        num_layers=2,
        max_distance=10,
        activation="relu",
        dropout=0.2,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        distance_initializer="zeros",
        seed=None,
        **kwargs,
    ):
        check_positive_int("hidden_dim", hidden_dim)
        check_positive_int("num_layers", num_layers)
        check_positive_int("max_distance", max_distance)
        check_rate("dropout", dropout)
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.max_distance = max_distance
        self.activation = keras.activations.get(activation)
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.distance_initializer = keras.initializers.get(distance_initializer)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.supports_masking = True

    def build(self, inputs_shape):
        check_rank("inputs", inputs_shape, 3)
        self.intra_layers = build_feed_forward(
            self,
            "intra",
            inputs_shape[-1],
            self.hidden_dim,
            self.num_layers,
            self.activation,
            self.kernel_initializer,
            self.bias_initializer,
        )
        self.distance_bias = self.add_weight(
            shape=(2 * self.max_distance + 2,),
            initializer=self.distance_initializer,
            name="distance_bias",
        )
        self.built = True

    def call(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        shape = static_shape(inputs)
        check_rank("inputs", shape, 3)
        check_mask("mask", mask, shape[0], shape[1])
        drop_keras_masks(inputs)
        inputs = ops.cast(inputs, self.compute_dtype)
        f = apply_feed_forward(
            self.intra_layers,
            inputs,
            self.dropout,
            self.seed_generator,
            training,
        )  # (B, T, H)
        scores = attention_logits("bih,bjh->bij", f, f)  # (B, T, T)
        # A row lookup in a (2D + 2, 1) table: the torch ONNX exporter has
        # no `ravel`, which torch's `take` of a 1-D table uses.
        table = ops.expand_dims(self.distance_bias, -1)
        bias = ops.take(table, self._buckets(ops.shape(f)[1]), axis=0)
        scores = scores + ops.cast(bias[..., 0], scores.dtype)[None]
        weights = masked_softmax(scores, pairwise_mask(mask, mask), axis=2)
        weights = ops.cast(weights, self.compute_dtype)
        attended = ops.einsum("bij,bjf->bif", weights, inputs)  # (B, T, F)
        output = ops.concatenate([inputs, attended], axis=-1)  # (B, T, 2F)
        if return_attention_scores:
            return output, weights
        return output

    def _buckets(self, length):
        """Bias index `(T, T)` of each pair `(i, j)`."""
        # 0..T-1 as a running count, not `arange(T)`: jax2onnx (ONNX export
        # on jax) rejects the `stop=None` of `arange(T)` and an unknown
        # `stop`.
        positions = ops.cumsum(ops.ones((length,), "int32")) - 1
        distance = positions[:, None] - positions[None, :]  # i - j
        beyond = 2 * self.max_distance + 1
        return ops.where(
            ops.abs(distance) > self.max_distance,
            beyond,
            distance + self.max_distance,
        )

    def compute_mask(self, inputs, previous_mask=None):
        return previous_mask

    def compute_output_spec(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        batch, length, width = inputs.shape
        dtype = self.compute_dtype
        output = keras.KerasTensor(
            (batch, length, None if width is None else 2 * width), dtype=dtype
        )
        if return_attention_scores:
            weights = keras.KerasTensor((batch, length, length), dtype=dtype)
            return output, weights
        return output

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "num_layers": self.num_layers,
                "max_distance": self.max_distance,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "distance_initializer": keras.initializers.serialize(
                    self.distance_initializer
                ),
                "seed": self.seed,
            }
        )
        return config
