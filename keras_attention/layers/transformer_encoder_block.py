import keras

from keras_attention.layers._transformer_block import TransformerBlockBase
from keras_attention.ops import merge_masks
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.masks import kept_keras_masks
from keras_attention.utils.masks import keras_mask
from keras_attention.utils.validation import check_dims
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerEncoderBlock(TransformerBlockBase):
    """One Transformer encoder layer: self-attention, then a feed-forward net.

    Post-norm, as in the paper (`norm_first=False`):

    ```
    x = layer_norm_1(x + dropout(self_attention(x, x)))
    x = layer_norm_2(x + dropout(dense_2(relu(dense_1(x)))))
    ```

    Pre-norm (`norm_first=True`), which trains more stably in deep stacks:

    ```
    x = x + dropout(self_attention(layer_norm_1(x)))
    x = x + dropout(dense_2(relu(dense_1(layer_norm_2(x)))))
    ```

    A pre-norm stack needs a final layer norm after its last block; the
    `Transformer` model adds it.

    Masking: the padding mask `(B, T)` is the AND of `padding_mask` and the
    Keras mask of `inputs` (for example from an embedding with
    `mask_zero=True`); either may be absent. Padded tokens get zero
    attention weight as keys; as queries they get a zero attention output,
    so their outputs are defined (finite) but meaningless. `attention_mask`
    `(B, T, T)` further restricts which key each query sees. A query with
    no key left gets a zero attention output. The output carries the Keras
    mask of `inputs` on.

    Relation to keras-hub: this is the computation of
    `keras_hub.layers.TransformerEncoder`, with the weights in the same
    order, so `ours.set_weights(theirs.get_weights())` reproduces its
    outputs at real tokens (keras-hub masks padded tokens as keys only, so
    padded outputs differ). Every argument name of keras-hub's constructor
    and call is accepted with its meaning (`normalize_first` is
    `norm_first`), except that its one `dropout` is our `dropout` plus
    `attention_dropout`, and its `layer_norm_epsilon` defaults to `1e-5`.
    keras-hub takes `(intermediate_dim, num_heads)` positionally; here
    every constructor argument is keyword-only, so a positional port fails
    with a `TypeError` instead of building other shapes.
    `keras_attention.compat.keras_hub.layers.TransformerEncoder` is this
    block with keras-hub's constructor verbatim (order, defaults, one
    `dropout`); `tests/layers/keras_hub_compat_test.py` holds both to
    keras-hub's installed class.

    Args:
        num_heads: int. Number of attention heads, `N`.
        intermediate_dim: int. Width of the feed-forward hidden layer (the
            paper's `d_ff`).
        key_dim: int. Width of each head, `H`. Defaults to `F // num_heads`.
        dropout: float. Residual dropout rate, applied to the output of each
            sublayer before the residual sum. Defaults to `0.1`.
        attention_dropout: float. Dropout on the attention weights. Defaults
            to `0.0`.
        activation: activation of the feed-forward hidden layer. Defaults to
            `"relu"`.
        layer_norm_epsilon: float. Defaults to `1e-6`.
        norm_first: bool. Pre-norm instead of the paper's post-norm.
            Defaults to `False`.
        normalize_first: bool. keras-hub's name for `norm_first`; give
            either (or both, equal).
        kernel_initializer: initializer for all kernels. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for all biases. Defaults to `"zeros"`.
        seed: int. Seed for the dropout layers. Defaults to `None`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `(B, T, F)`.
        padding_mask: optional boolean tensor `(B, T)`, `True` = real token.
        attention_mask: optional boolean tensor `(B, T, T)`, `True` = attend.
        return_attention_scores: bool, keyword-only. Also return the
            attention weights. Defaults to `False`.
        training: bool, keyword-only. Whether dropout is in effect.

    Returns:
        `outputs` `(B, T, F)`; or `(outputs, weights)` with the attention
        weights `(B, N, T, T)` when `return_attention_scores=True`.

    Example:

    >>> block = TransformerEncoderBlock(num_heads=2, intermediate_dim=16)
    >>> x = keras.random.normal((2, 5, 8))
    >>> y = block(x, padding_mask=keras.ops.array([[1, 1, 1, 0, 0]] * 2) > 0)
    >>> keras.ops.shape(y)
    (2, 5, 8)

    In a model, the padding mask coming from the embedding:

    ```python
    tokens = keras.Input((None,), dtype="int32")
    embedding = TokenAndPositionEmbedding(
        8000, embedding_dim=256, mask_zero=True
    )
    x = TransformerEncoderBlock(num_heads=4, intermediate_dim=1024)(
        embedding(tokens)
    )
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          sections 3.1, 3.3 and 5.4.
        - [Xiong et al., 2020](https://arxiv.org/abs/2002.04745) (pre-norm).
    """

    def build(self, inputs_shape):
        check_rank("inputs", inputs_shape, 3)
        key_dim = self._head_width(inputs_shape[-1])
        self.self_attention = self._attention("self_attention", key_dim)
        self.self_attention.build(inputs_shape, inputs_shape)
        self.self_attention_norm = self._norm("self_attention_norm")
        self.self_attention_norm.build(inputs_shape)
        self.self_attention_dropout = self._dropout("self_attention_dropout")
        self._build_feedforward(inputs_shape)
        self.built = True

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        *,
        return_attention_scores=False,
        training=None,
    ):
        self._check_call(inputs, padding_mask, attention_mask)
        # The implicit Keras mask is read before any cast drops it, and put
        # back afterwards (the attention sublayer detaches its inputs').
        with kept_keras_masks(inputs) as (implicit,):
            return self._encode(
                inputs,
                merge_masks(padding_mask, implicit),
                attention_mask,
                return_attention_scores,
                training,
            )

    def _encode(
        self,
        inputs,
        padding_mask,
        attention_mask,
        return_attention_scores,
        training,
    ):
        x = floating_inputs(self.compute_dtype, inputs)

        def self_attend(x):
            attended = self.self_attention(
                x,
                x,
                query_mask=padding_mask,
                value_mask=padding_mask,
                attention_mask=attention_mask,
                return_attention_scores=return_attention_scores,
                training=training,
            )
            if return_attention_scores:
                return attended
            return attended, None

        x, scores = self._residual("self_attention", x, self_attend, training)
        x = self._feedforward(x, training)
        if return_attention_scores:
            return x, scores
        return x

    def _check_call(self, inputs, padding_mask, attention_mask):
        shape = static_shape(inputs)
        check_rank("inputs", shape, 3)
        check_mask("padding_mask", padding_mask, shape[0], shape[1])
        check_mask("inputs._keras_mask", keras_mask(inputs), shape[0], shape[1])
        check_dims(
            "attention_mask",
            static_shape(attention_mask),
            (shape[0], shape[1], shape[1]),
            "(batch, length, length)",
        )

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_spec(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        *,
        return_attention_scores=False,
        training=None,
    ):
        self._check_call(inputs, padding_mask, attention_mask)
        output = keras.KerasTensor(inputs.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        batch, length = inputs.shape[0], inputs.shape[1]
        scores = keras.KerasTensor(
            (batch, self.num_heads, length, length), dtype=self.compute_dtype
        )
        return output, scores
