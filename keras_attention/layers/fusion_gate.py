import keras
from keras import ops

from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.initializers import clone_initializer
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class FusionGate(keras.layers.Layer):
    """Gated mix of a sequence and its attention context.

    ```
    gate = sigmoid(fusion_dense([inputs; context]))    # W [x; s] + b
    output = gate * inputs + (1 - gate) * context      # (B, T, F)
    ```

    The gate is computed per token and per feature, so the layer decides
    feature by feature how much of the token's own representation to keep.

    Masking: the layer is position-wise; it passes the Keras mask of
    `inputs` on unchanged.

    Args:
        kernel_initializer: initializer for the gate kernel. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for the gate bias. Defaults to
            `"zeros"`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor `(..., F)`, the token representations `x`.
        context: tensor of the same shape, the attention output `s`.

    Returns:
        A tensor of the shape of `inputs`.

    Example:

    >>> gate = FusionGate()
    >>> x = keras.random.normal((2, 5, 8))
    >>> keras.ops.shape(gate(x, keras.random.normal((2, 5, 8))))
    (2, 5, 8)

    References:
        - [Shen et al., 2017, DiSAN](https://arxiv.org/abs/1709.04696),
          equation 15.
        - [Shen et al., 2018, ReSAN](https://arxiv.org/abs/1801.10296),
          section 3.
    """

    def __init__(
        self,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def build(self, inputs_shape, context_shape=None):
        _check_same_features(inputs_shape, context_shape)
        features = inputs_shape[-1]
        self.fusion_dense = keras.layers.Dense(
            features,
            activation="sigmoid",
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name="fusion_dense",
        )
        self.fusion_dense.build(tuple(inputs_shape[:-1]) + (2 * features,))
        self.built = True

    def call(self, inputs, context):
        _check_same_features(static_shape(inputs), static_shape(context))
        drop_keras_masks(inputs, context)
        inputs, context = floating_inputs(self.compute_dtype, inputs, context)
        # (B, T, 2F) -> gate (B, T, F)
        gate = self.fusion_dense(ops.concatenate([inputs, context], axis=-1))
        return gate * inputs + (1.0 - gate) * context

    def compute_output_shape(self, inputs_shape, context_shape=None):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config


def _check_same_features(inputs_shape, context_shape):
    if inputs_shape is None or context_shape is None:
        return
    if len(inputs_shape) != len(context_shape) or inputs_shape[-1] not in (
        None,
        context_shape[-1],
    ):
        if context_shape[-1] is None:
            return
        raise ValueError(
            "Arguments `inputs` and `context` must have the same rank and "
            "last dimension. Received: inputs with shape "
            f"{tuple(inputs_shape)}, context with shape {tuple(context_shape)}"
        )
    # Batch and length too: the gate concatenates the two along features.
    if any(
        a is not None and b is not None and a != b
        for a, b in zip(inputs_shape[:-1], context_shape[:-1])
    ):
        raise ValueError(
            "Arguments `inputs` and `context` must have the same shape. "
            f"Received: inputs with shape {tuple(inputs_shape)}, context "
            f"with shape {tuple(context_shape)}"
        )
