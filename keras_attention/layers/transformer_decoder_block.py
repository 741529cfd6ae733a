import keras

from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.transformer_encoder_block import (
    TransformerBlockBase,
)
from keras_attention.layers.transformer_encoder_block import _head_width
from keras_attention.layers.transformer_encoder_block import clone_initializer
from keras_attention.layers.transformer_encoder_block import sublayer_seed
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerDecoderBlock(TransformerBlockBase):
    """One Transformer decoder layer: causal self-attention, encoder-decoder
    attention, then a feed-forward net.

    Post-norm, as in the paper (`norm_first=False`):

    ```
    x = layer_norm_1(x + dropout(self_attention(x, x, causal)))
    x = layer_norm_2(x + dropout(cross_attention(x, encoder_outputs)))
    x = layer_norm_3(x + dropout(dense_2(relu(dense_1(x)))))
    ```

    With `norm_first=True` each sublayer reads `layer_norm_i(x)` and the
    residual sum is not normalized (pre-norm).

    Incremental decoding: `self_attention_cache` `(B, 2, L, N, H)` holds the
    projected keys and values of the target positions decoded so far (`L`
    is the longest output); pass the new tokens' hidden states as `inputs`
    and their first position as `cache_update_index`. The call then
    returns the updated cache as well, and its outputs equal those of the
    full causal computation. `cross_attention_cache` `(B, 2, S, N, H)`
    holds the projected encoder outputs, computed once with
    `compute_cross_attention_cache(encoder_outputs)`; with it,
    `encoder_outputs` may be left out.

    Masking: `padding_mask` `(B, T)` marks real target tokens and
    `encoder_padding_mask` `(B, S)` real source tokens (`True` = real).
    Padded source tokens and future target tokens get zero attention
    weight. Keras masks are not read: pass the masks explicitly (the
    `Transformer` model does).

    Args:
        num_heads: int. Number of attention heads, `N`.
        intermediate_dim: int. Width of the feed-forward hidden layer.
        key_dim: int. Width of each head, `H`. Defaults to `F // num_heads`.
        dropout: float. Residual dropout rate. Defaults to `0.1`.
        attention_dropout: float. Dropout on the attention weights. Defaults
            to `0.0`.
        activation: activation of the feed-forward hidden layer. Defaults to
            `"relu"`.
        layer_norm_epsilon: float. Defaults to `1e-6`.
        norm_first: bool. Pre-norm instead of the paper's post-norm.
            Defaults to `False`.
        kernel_initializer: initializer for all kernels. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for all biases. Defaults to `"zeros"`.
        seed: int. Seed for the dropout layers. Defaults to `None`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `(B, T, F)`, the target hidden states.
        encoder_outputs: float tensor `(B, S, F)`. May be `None` when
            `cross_attention_cache` is given.
        padding_mask: optional boolean tensor `(B, T)`.
        encoder_padding_mask: optional boolean tensor `(B, S)`.
        self_attention_cache: optional tensor `(B, 2, L, N, H)`.
        cross_attention_cache: optional tensor `(B, 2, S, N, H)`.
        cache_update_index: int or scalar int tensor, position of the first
            token of `inputs`; required with `self_attention_cache`.
        return_attention_scores: bool. Also return the self- and
            cross-attention weights.
        training: bool. Whether dropout is in effect.

    Returns:
        `outputs` `(B, T, F)`; followed by the self-attention weights
        `(B, N, T, T)` (or `(B, N, T, L)` with a cache) and the
        cross-attention weights `(B, N, T, S)` when
        `return_attention_scores=True`; followed by the updated
        `self_attention_cache` when one is given.

    Example:

    >>> block = TransformerDecoderBlock(num_heads=2, intermediate_dim=16)
    >>> target = keras.random.normal((2, 4, 8))
    >>> source = keras.random.normal((2, 6, 8))
    >>> keras.ops.shape(block(target, source))
    (2, 4, 8)

    Decoding one token at a time with caches:

    ```python
    cross_cache = block.compute_cross_attention_cache(source)
    self_cache = keras.ops.zeros((2, 2, max_length, 2, 4))
    for t in range(max_length):
        hidden, self_cache = block(
            embedded[:, t : t + 1],
            self_attention_cache=self_cache,
            cross_attention_cache=cross_cache,
            cache_update_index=t,
        )
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          sections 3.1, 3.2.3 and 3.3.
    """

    def build(self, inputs_shape, encoder_outputs_shape=None):
        check_rank("inputs", inputs_shape, 3)
        if encoder_outputs_shape is None:
            encoder_outputs_shape = inputs_shape
        check_rank("encoder_outputs", encoder_outputs_shape, 3)
        hidden_dim = inputs_shape[-1]
        key_dim = self.key_dim or _head_width(hidden_dim, self.num_heads)
        self.self_attention = self._attention("self_attention", key_dim, 0)
        self.self_attention.build(inputs_shape, inputs_shape)
        self.self_attention_norm = self._norm("self_attention_norm")
        self.self_attention_norm.build(inputs_shape)
        self.self_attention_dropout = self._dropout("self_attention_dropout", 1)
        self.cross_attention = self._attention("cross_attention", key_dim, 2)
        self.cross_attention.build(inputs_shape, encoder_outputs_shape)
        self.cross_attention_norm = self._norm("cross_attention_norm")
        self.cross_attention_norm.build(inputs_shape)
        self.cross_attention_dropout = self._dropout(
            "cross_attention_dropout", 3
        )
        self._build_feedforward(inputs_shape, seed_offset=4)
        self.built = True

    def _attention(self, name, key_dim, seed_offset):
        return MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=key_dim,
            dropout=self.attention_dropout,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            seed=sublayer_seed(self.seed, seed_offset),
            dtype=self.dtype_policy,
            name=name,
        )

    def _dropout(self, name, seed_offset):
        return keras.layers.Dropout(
            self.dropout,
            seed=sublayer_seed(self.seed, seed_offset),
            dtype=self.dtype_policy,
            name=name,
        )

    def call(
        self,
        inputs,
        encoder_outputs=None,
        padding_mask=None,
        encoder_padding_mask=None,
        self_attention_cache=None,
        cross_attention_cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        training=None,
    ):
        check_rank("inputs", static_shape(inputs), 3)
        if encoder_outputs is None and cross_attention_cache is None:
            raise ValueError(
                "TransformerDecoderBlock needs `encoder_outputs` or a "
                "`cross_attention_cache`. Received: encoder_outputs=None, "
                "cross_attention_cache=None"
            )
        if self_attention_cache is not None and cache_update_index is None:
            raise ValueError(
                "With `self_attention_cache`, pass `cache_update_index`, the "
                "position of the first token of `inputs`. Received: "
                "cache_update_index=None"
            )
        shape = static_shape(inputs)
        if self_attention_cache is None:
            check_mask("padding_mask", padding_mask, shape[0], shape[1])
        memory_shape = static_shape(encoder_outputs)
        if cross_attention_cache is not None:
            cache_shape = static_shape(cross_attention_cache)
            memory_shape = (cache_shape[0], cache_shape[2])
            memory_name = "cross_attention_cache"
        else:
            memory_name = "encoder_outputs"
        check_mask(
            "encoder_padding_mask",
            encoder_padding_mask,
            memory_shape[0],
            memory_shape[1],
            memory_name,
        )
        scores = ()

        inputs, encoder_outputs = floating_inputs(
            self.compute_dtype, inputs, encoder_outputs
        )
        # Causal self-attention, optionally over the cached prefix.
        x = inputs
        residual = x
        if self.norm_first:
            x = self.self_attention_norm(x)
        attended = self.self_attention(
            x,
            x,
            query_mask=padding_mask,
            value_mask=padding_mask,
            cache=self_attention_cache,
            cache_update_index=cache_update_index,
            use_causal_mask=True,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        attended, self_attention_cache, scores = _unpack(
            attended, self_attention_cache, return_attention_scores, scores
        )
        x = residual + self.self_attention_dropout(attended, training=training)
        if not self.norm_first:
            x = self.self_attention_norm(x)

        # Encoder-decoder attention. With a cross-attention cache the value
        # input is only shape-checked, so the queries stand in for it.
        residual = x
        if self.norm_first:
            x = self.cross_attention_norm(x)
        memory = encoder_outputs if encoder_outputs is not None else x
        attended = self.cross_attention(
            x,
            memory,
            query_mask=padding_mask,
            value_mask=encoder_padding_mask,
            cache=cross_attention_cache,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        attended, _, scores = _unpack(
            attended, cross_attention_cache, return_attention_scores, scores
        )
        x = residual + self.cross_attention_dropout(attended, training=training)
        if not self.norm_first:
            x = self.cross_attention_norm(x)

        x = self._feedforward(x, training)
        outputs = (x,) + scores
        if self_attention_cache is not None:
            outputs += (self_attention_cache,)
        return outputs[0] if len(outputs) == 1 else outputs

    def compute_cross_attention_cache(self, encoder_outputs):
        """Projects `encoder_outputs` `(B, S, F)` once into keys and values.

        Returns a cache `(B, 2, S, N, H)` to pass as `cross_attention_cache`
        at every decoding step.
        """
        return self.cross_attention.compute_cache(encoder_outputs)

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_spec(
        self,
        inputs,
        encoder_outputs=None,
        padding_mask=None,
        encoder_padding_mask=None,
        self_attention_cache=None,
        cross_attention_cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        training=None,
    ):
        dtype = self.compute_dtype
        batch, length = inputs.shape[0], inputs.shape[1]
        outputs = (keras.KerasTensor(inputs.shape, dtype=dtype),)
        if return_attention_scores:
            keys = length
            if self_attention_cache is not None:
                keys = self_attention_cache.shape[2]
            if cross_attention_cache is not None:
                sources = cross_attention_cache.shape[2]
            else:
                sources = encoder_outputs.shape[1]
            outputs += (
                keras.KerasTensor(
                    (batch, self.num_heads, length, keys), dtype=dtype
                ),
                keras.KerasTensor(
                    (batch, self.num_heads, length, sources), dtype=dtype
                ),
            )
        if self_attention_cache is not None:
            outputs += (
                keras.KerasTensor(
                    self_attention_cache.shape,
                    dtype=self_attention_cache.dtype,
                ),
            )
        return outputs[0] if len(outputs) == 1 else outputs


def _unpack(result, cache, return_attention_scores, scores):
    """Splits a MultiHeadAttention result into (output, cache, scores)."""
    if not isinstance(result, (tuple, list)):
        return result, cache, scores
    result = list(result)
    output = result.pop(0)
    if return_attention_scores:
        scores = scores + (result.pop(0),)
    if cache is not None:
        cache = result.pop(0)
    return output, cache, scores
