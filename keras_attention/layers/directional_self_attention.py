import keras
from keras import ops

from keras_attention.layers.fusion_gate import FusionGate
from keras_attention.ops import pairwise_mask
from keras_attention.ops.multi_dimensional import DIRECTIONS
from keras_attention.ops.multi_dimensional import directional_mask
from keras_attention.ops.multi_dimensional import multi_dimensional_attention
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.initializers import clone_initializer
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.validation import check_choice
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class DirectionalSelfAttention(keras.layers.Layer):
    """Multi-dimensional directional self-attention (DiSA).

    Every token attends to the other tokens with one score per feature; a
    directional mask decides which tokens it may see:

    ```
    q = query_dense(x)                 # W1 x_t,     (B, T, F)
    k = key_dense(x)                   # W2 x_s + b, (B, S, F)
    logits[b, t, s, f] = c * tanh((q[b, t, f] + k[b, s, f]) / c)
    weights = masked_softmax(logits, mask[b, t, s], axis=s)  # per feature
    context[b, t] = sum_s weights[b, t, s] * x[b, s]         # (B, T, F)
    output = fusion_gate(x, context)   # F * x + (1 - F) * context
    ```

    `direction="forward"` lets token `t` see tokens `s < t`, `"backward"`
    tokens `s > t`, and `None` every token but itself.

    Masking: the mask comes from the `mask` argument or the Keras mask of
    `inputs`; padded tokens get exactly zero weight. A token with nothing to
    attend to (the first token under a forward mask, the last under a
    backward mask, a one-token sentence, a padded position) gets a zero
    context, so its output is `F * x` (with the fusion gate) or zeros
    (without). The output carries the input's Keras mask.

    Memory: the weights have shape `(B, T, T, F)`. With `block_size`, they
    are computed `block_size` queries at a time (same outputs), so peak
    memory grows with `block_size * T * F` instead of `T * T * F`.

    Relation to the paper: DiSAN first maps `x` through a dense layer `h =
    elu(W x + b)` and attends over `h`; here that projection is left to the
    model (the ReSAN encoder has one), so the layer attends over its input.

    Args:
        direction: `"forward"`, `"backward"` or `None`. Defaults to `None`.
        tanh_scale: float. `c`, the bound of the scores. Defaults to `5.0`.
        use_fusion_gate: bool. Mix the context with the input through a
            `FusionGate`; otherwise return the context. Defaults to `True`.
        block_size: int. Queries per block of the blocked computation.
            Defaults to `None` (one block).
        kernel_initializer: initializer for the kernels. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for the biases. Defaults to `"zeros"`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor `(B, T, F)`.
        mask: optional boolean tensor `(B, T)`, `True` = real token.
        return_attention_scores: bool. Also return the attention weights
            `(B, T, T, F)` (not with `block_size`).

    Returns:
        `output` `(B, T, F)`; followed by the weights when asked for.

    Example:

    >>> layer = DirectionalSelfAttention(direction="forward")
    >>> x = keras.random.normal((2, 5, 8))
    >>> keras.ops.shape(layer(x))
    (2, 5, 8)

    In a model with padding:

    ```python
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(1000, 64, mask_zero=True)(tokens)
    x = DirectionalSelfAttention(direction="forward")(x)
    ```

    References:
        - [Shen et al., 2017, DiSAN](https://arxiv.org/abs/1709.04696),
          sections 2.3 and 3.
    """

    def __init__(
        self,
        direction=None,
        tanh_scale=5.0,
        use_fusion_gate=True,
        block_size=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        check_choice("direction", direction, DIRECTIONS)
        check_positive_int("block_size", block_size, allow_none=True)
        if isinstance(tanh_scale, bool) or not isinstance(
            tanh_scale, (int, float)
        ):
            tanh_scale = -1
        if tanh_scale <= 0:
            raise ValueError(
                "Argument `tanh_scale` must be a positive number. "
                f"Received: tanh_scale={tanh_scale!r}"
            )
        super().__init__(**kwargs)
        self.direction = direction
        self.tanh_scale = float(tanh_scale)
        self.use_fusion_gate = use_fusion_gate
        self.block_size = block_size
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def build(self, inputs_shape):
        check_rank("inputs", inputs_shape, 3)
        features = inputs_shape[-1]
        self.query_dense, self.key_dense, self.fusion_gate = (
            attention_sublayers(self, inputs_shape)
        )
        self._features = features
        self.built = True

    def call(self, inputs, mask=None, return_attention_scores=False):
        shape = static_shape(inputs)
        check_rank("inputs", shape, 3)
        if shape[-1] not in (None, self._features):
            raise ValueError(
                f"The last dimension of `inputs` must be {self._features}, "
                "the size the layer was built with. Received: inputs with "
                f"shape {shape}"
            )
        check_mask("mask", mask, shape[0], shape[1])
        drop_keras_masks(inputs)
        inputs = floating_inputs(self.compute_dtype, inputs)
        length = ops.shape(inputs)[1]
        # (1, T, T) direction AND (B, T, T) padding.
        attention_mask = ops.expand_dims(
            directional_mask(length, direction=self.direction), 0
        )
        if mask is not None:
            attention_mask = ops.logical_and(
                attention_mask, pairwise_mask(mask, mask)
            )
        result = multi_dimensional_attention(
            self.query_dense(inputs),
            self.key_dense(inputs),
            inputs,
            mask=attention_mask,
            tanh_scale=self.tanh_scale,
            block_size=self.block_size,
            return_attention_scores=return_attention_scores,
        )
        context, scores = result if return_attention_scores else (result, None)
        output = context
        if self.fusion_gate is not None:
            output = self.fusion_gate(inputs, context)
        if return_attention_scores:
            return output, scores
        return output

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "direction": self.direction,
                "tanh_scale": self.tanh_scale,
                "use_fusion_gate": self.use_fusion_gate,
                "block_size": self.block_size,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config


def attention_sublayers(layer, inputs_shape):
    """Built `query_dense` (W1), `key_dense` (W2, b) and `fusion_gate`
    (`None` without `layer.use_fusion_gate`) for `layer`.

    Shared by `DirectionalSelfAttention` and `ReinforcedSelfAttention`,
    whose score functions are the same; the caller keeps the returned
    sublayers as its own attributes. Reads the layer's initializers and
    dtype policy.
    """
    features = inputs_shape[-1]
    query_dense = keras.layers.Dense(
        features,
        use_bias=False,
        kernel_initializer=clone_initializer(layer.kernel_initializer),
        dtype=layer.dtype_policy,
        name="query_dense",
    )
    query_dense.build(inputs_shape)
    key_dense = keras.layers.Dense(
        features,
        kernel_initializer=clone_initializer(layer.kernel_initializer),
        bias_initializer=clone_initializer(layer.bias_initializer),
        dtype=layer.dtype_policy,
        name="key_dense",
    )
    key_dense.build(inputs_shape)
    fusion_gate = None
    if layer.use_fusion_gate:
        fusion_gate = FusionGate(
            kernel_initializer=clone_initializer(layer.kernel_initializer),
            bias_initializer=clone_initializer(layer.bias_initializer),
            dtype=layer.dtype_policy,
            name="fusion_gate",
        )
        fusion_gate.build(inputs_shape, inputs_shape)
    return query_dense, key_dense, fusion_gate
