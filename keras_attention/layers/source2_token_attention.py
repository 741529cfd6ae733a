import keras
from keras import ops

from keras_attention.ops import masked_softmax
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.initializers import clone_initializer
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class Source2TokenAttention(keras.layers.Layer):
    """Multi-dimensional source2token pooling of a sequence into a vector.

    Each feature of each token gets its own score; a softmax over the tokens
    per feature gives the weights of a weighted sum:

    ```
    hidden = elu(hidden_dense(inputs))          # W1 x_t + b1, (B, T, F)
    logits = score_dense(hidden)                # W2 hidden,   (B, T, F)
    weights = masked_softmax(logits, mask, axis=1)
    output = sum_t weights[:, t] * inputs[:, t] # (B, F)
    ```

    The paper's output bias `b2` is left out: it adds the same number to
    every token's score of a feature, which the softmax over tokens cancels,
    so it could never learn.

    Masking: the mask comes from the `mask` argument or the Keras mask of
    `inputs`. Padded tokens get exactly zero weight; a row with no real
    token pools to zeros. The output has no sequence axis and carries no
    mask.

    Args:
        hidden_dim: int. Width of the hidden layer. Defaults to the input
            width.
        kernel_initializer: initializer for both kernels. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for the hidden bias. Defaults to
            `"zeros"`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor `(B, T, F)`.
        mask: optional boolean tensor `(B, T)`, `True` = real token.

    Returns:
        A tensor `(B, F)`.

    Example:

    >>> pool = Source2TokenAttention()
    >>> x = keras.random.normal((2, 5, 8))
    >>> keras.ops.shape(pool(x))
    (2, 8)

    References:
        - [Shen et al., 2017, DiSAN](https://arxiv.org/abs/1709.04696),
          section 2.3 (multi-dimensional source2token self-attention).
        - [Shen et al., 2018, ReSAN](https://arxiv.org/abs/1801.10296).
    """

    def __init__(
        self,
        hidden_dim=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        check_positive_int("hidden_dim", hidden_dim, allow_none=True)
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def build(self, inputs_shape):
        check_rank("inputs", inputs_shape, 3)
        features = inputs_shape[-1]
        self.hidden_dense = keras.layers.Dense(
            self.hidden_dim or features,
            activation="elu",
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name="hidden_dense",
        )
        self.hidden_dense.build(inputs_shape)
        self.score_dense = keras.layers.Dense(
            features,
            use_bias=False,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy,
            name="score_dense",
        )
        self.score_dense.build(
            tuple(inputs_shape[:-1]) + (self.hidden_dim or features,)
        )
        self.built = True

    def call(self, inputs, mask=None):
        shape = static_shape(inputs)
        check_rank("inputs", shape, 3)
        check_mask("mask", mask, shape[0], shape[1])
        drop_keras_masks(inputs)
        inputs = floating_inputs(self.compute_dtype, inputs)
        logits = self.score_dense(self.hidden_dense(inputs))  # (B, T, F)
        if mask is not None:
            mask = ops.expand_dims(ops.cast(mask, "bool"), -1)  # (B, T, 1)
        weights = masked_softmax(logits, mask, axis=1)  # (B, T, F)
        return ops.sum(weights * inputs, axis=1)  # (B, F)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config
