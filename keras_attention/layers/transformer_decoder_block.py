import keras
from keras import ops

from keras_attention.layers._transformer_block import TransformerBlockBase
from keras_attention.ops import from_stacked_cache
from keras_attention.ops import merge_masks
from keras_attention.ops import to_stacked_cache
from keras_attention.ops.key_value_cache import cache_batch_and_length
from keras_attention.ops.key_value_cache import is_stacked_cache
from keras_attention.ops.writes import slice_update
from keras_attention.utils.aliases import rename_keywords
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.masks import kept_keras_masks
from keras_attention.utils.masks import keras_mask
from keras_attention.utils.validation import check_dims
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape

# keras-hub's call argument names -> ours.
KERAS_HUB_CALL_NAMES = {
    "decoder_sequence": "inputs",
    "encoder_sequence": "encoder_outputs",
    "decoder_padding_mask": "padding_mask",
    "decoder_attention_mask": "attention_mask",
}


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerDecoderBlock(TransformerBlockBase):
    """One Transformer decoder layer: causal self-attention, optional
    encoder-decoder attention, then a feed-forward net.

    Post-norm, as in the paper (`norm_first=False`):

    ```
    x = layer_norm_1(x + dropout(self_attention(x, x, causal)))
    x = layer_norm_2(x + dropout(cross_attention(x, encoder_outputs)))
    x = layer_norm_3(x + dropout(dense_2(relu(dense_1(x)))))
    ```

    With `norm_first=True` each sublayer reads `layer_norm_i(x)` and the
    residual sum is not normalized (pre-norm).

    Two modes, fixed when the block is built:
    - encoder-decoder (the paper's): built with an encoder input,
      `build(inputs_shape, encoder_outputs_shape)` or a first call
      `block(inputs, encoder_outputs)`; every call then needs
      `encoder_outputs` or a `cross_attention_cache`.
    - decoder-only (GPT-style): built without one, `build(inputs_shape)` or
      a first call `block(inputs)`. The block then has no cross-attention
      sublayers or weights (the middle line above is skipped), and passing
      encoder inputs is an error.

    Incremental decoding: `self_attention_cache` holds the projected keys
    and values of the target positions decoded so far, `L` of them at most:
    a heads-first pair `(keys, values)` of `(B, N, L, H)` (the layout of
    `keras_attention.ops.key_value_cache`) or keras-hub's stacked `(B, 2,
    L, N, H)`; the updated cache comes back in the layout it came in. Pass
    the new tokens' hidden states as `inputs` and their first position as
    `cache_update_index`. Their keys and values are written into the cache
    there, and with `use_causal_mask=True` the outputs equal those of the
    full causal computation. `cross_attention_cache` holds the projected
    encoder outputs, `(B, N, S, H)` pairs from
    `cross_attention.compute_key_value_cache(encoder_outputs)` or the
    stacked `(B, 2, S, N, H)` of `compute_cross_attention_cache(
    encoder_outputs)`; with it, `encoder_outputs` may be left out.
    `decode_step` is the cached call of a decoding loop: heads-first
    caches, named arguments, no Keras-mask bookkeeping.

    Masking: the target padding mask `(B, T)` is the AND of `padding_mask`
    and the Keras mask of `inputs`, and the source padding mask `(B, S)`
    the AND of `encoder_padding_mask` and the Keras mask of
    `encoder_outputs` (for example from an embedding with
    `mask_zero=True`); any of them may be absent. Padded target tokens get
    zero weight as keys and a zero attention output as queries (their
    outputs are finite but meaningless); padded source tokens get zero
    weight. `use_causal_mask=True` (the default) hides later targets;
    `attention_mask` `(B, T, T)` and `encoder_attention_mask` `(B, T, S)`
    further restrict which keys each query sees. With a self-attention
    cache, `padding_mask` is `(B, L)` and marks the real cache slots (as in
    keras-hub; the new tokens' slots start at `cache_update_index`), the
    Keras mask of `inputs` `(B, T)` is ANDed into the new tokens' slots,
    and `attention_mask` is `(B, T, L)`; with `use_causal_mask=False` the
    queries see every cache slot, filled or not. A query with no key left
    gets a zero attention output. The output carries the Keras mask of
    `inputs` on.

    Relation to keras-hub: this is the computation of
    `keras_hub.layers.TransformerDecoder` in both modes, with the weights
    in the same order, so `ours.set_weights(theirs.get_weights())`
    reproduces its outputs at real tokens (keras-hub masks padded tokens as
    keys only). Every argument name of its constructor and call is
    accepted with its meaning. Its call names `decoder_sequence`,
    `encoder_sequence`, `decoder_padding_mask` and `decoder_attention_mask`
    are other names for `inputs`, `encoder_outputs`, `padding_mask` and
    `attention_mask` (give one of each pair); the positional order of the
    first six is keras-hub's. Its cache arguments are accepted under its
    names:
    `self_attention_cache_update_index` is `cache_update_index`, and
    `cross_attention_cache_update_index=0` writes the projected
    `encoder_outputs` into `cross_attention_cache` (`None` reuses it). A
    call with `self_attention_cache_update_index` returns keras-hub's
    structure, `(outputs, self_attention_cache, cross_attention_cache)`
    (the last only with a cross-attention cache), and gives keras-hub's
    outputs and caches (`tests/layers/transformer_decoder_block_test.py`).
    Its `normalize_first` is `norm_first` (either name may be given and
    read), its one `dropout` is our `dropout` plus `attention_dropout`, and
    its `layer_norm_epsilon` defaults to `1e-5`. keras-hub takes
    `(intermediate_dim, num_heads)` positionally; here every constructor
    argument is keyword-only, so a positional port fails with a
    `TypeError`. `keras_attention.compat.keras_hub.layers.
    TransformerDecoder` is this block with keras-hub's constructor verbatim
    (`tests/layers/keras_hub_compat_test.py` holds both to keras-hub's
    installed class).

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
        normalize_first: bool. keras-hub's name for `norm_first`; give
            either (or both, equal).
        kernel_initializer: initializer for all kernels. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for all biases. Defaults to `"zeros"`.
        seed: int. Seed for the dropout layers. Defaults to `None`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `(B, T, F)`, the target hidden states; also
            `decoder_sequence` (keras-hub's name).
        encoder_outputs: float tensor `(B, S, F)`. Leave out in a
            decoder-only block; may be left out with `cross_attention_cache`.
            Also `encoder_sequence`.
        padding_mask: optional boolean tensor `(B, T)`, `True` = real token;
            `(B, L)` over the cache slots with a self-attention cache. Also
            `decoder_padding_mask`.
        attention_mask: optional boolean tensor `(B, T, T)`, or `(B, T, L)`
            with a self-attention cache; `True` = attend. Also
            `decoder_attention_mask`.
        encoder_padding_mask: optional boolean tensor `(B, S)`.
        encoder_attention_mask: optional boolean tensor `(B, T, S)`.
        self_attention_cache: optional pair `(keys, values)` of `(B, N, L,
            H)`, or a stacked tensor `(B, 2, L, N, H)`; keyword-only.
        cache_update_index: int or scalar int tensor, keyword-only: the
            position of the first token of `inputs`; required with
            `self_attention_cache`.
        cross_attention_cache: optional pair of `(B, N, S, H)` or stacked
            tensor `(B, 2, S, N, H)`, keyword-only.
        self_attention_cache_update_index: keras-hub's name for
            `cache_update_index`, keyword-only; see "Relation to keras-hub".
        cross_attention_cache_update_index: int or `None`, keyword-only
            (keras-hub's): where to write the projected `encoder_outputs`
            into `cross_attention_cache`; `None` uses the cache as it is.
        use_causal_mask: bool, keyword-only. Query `t` sees only targets
            `s <= t`. Defaults to `True`.
        return_attention_scores: bool, keyword-only. Also return the
            attention weights. Defaults to `False`.
        training: bool, keyword-only. Whether dropout is in effect.

    Returns:
        `outputs` `(B, T, F)` alone by default; otherwise a tuple, in this
        order: `outputs`; then, when `return_attention_scores=True`, the
        self-attention weights `(B, N, T, T)` (`(B, N, T, L)` with a cache)
        followed, in a block with cross-attention, by the cross-attention
        weights `(B, N, T, S)`; then, exactly when `self_attention_cache`
        is given, the updated self-attention cache; then, in a call with
        `self_attention_cache_update_index` and a cross-attention cache,
        the cross-attention cache (keras-hub's structure). Otherwise the
        cross-attention cache is not returned (it does not change).

    Example:

    >>> block = TransformerDecoderBlock(num_heads=2, intermediate_dim=16)
    >>> target = keras.random.normal((2, 4, 8))
    >>> source = keras.random.normal((2, 6, 8))
    >>> keras.ops.shape(block(target, source))
    (2, 4, 8)
    >>> gpt_block = TransformerDecoderBlock(num_heads=2, intermediate_dim=16)
    >>> keras.ops.shape(gpt_block(target))
    (2, 4, 8)
    >>> gpt_block.cross_attention is None
    True

    Decoding one token at a time with caches:

    ```python
    cross_cache = block.cross_attention.compute_key_value_cache(source)
    self_cache = keras_attention.ops.empty_cache(2, 2, max_length, 4)
    for t in range(max_length):
        hidden, self_cache = block.decode_step(
            embedded[:, t : t + 1],
            self_attention_cache=self_cache,
            cache_update_index=t,
            cross_attention_cache=cross_cache,
        )
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          sections 3.1, 3.2.3 and 3.3.
        - [Liu et al., 2018](https://arxiv.org/abs/1801.10198) (the
          decoder-only Transformer).
    """

    def build(self, inputs_shape, encoder_outputs_shape=None):
        check_rank("inputs", inputs_shape, 3)
        key_dim = self._head_width(inputs_shape[-1])
        self.self_attention = self._attention("self_attention", key_dim)
        self.self_attention.build(inputs_shape, inputs_shape)
        self.self_attention_norm = self._norm("self_attention_norm")
        self.self_attention_norm.build(inputs_shape)
        self.self_attention_dropout = self._dropout("self_attention_dropout")
        self.cross_attention = None
        self.cross_attention_norm = None
        self.cross_attention_dropout = None
        if encoder_outputs_shape is not None:
            check_rank("encoder_outputs", encoder_outputs_shape, 3)
            self.cross_attention = self._attention("cross_attention", key_dim)
            self.cross_attention.build(inputs_shape, encoder_outputs_shape)
            self.cross_attention_norm = self._norm("cross_attention_norm")
            self.cross_attention_norm.build(inputs_shape)
            self.cross_attention_dropout = self._dropout(
                "cross_attention_dropout"
            )
        self._build_feedforward(inputs_shape, norm_last=True)
        self.built = True

    def __call__(self, *args, **kwargs):
        # keras-hub's names become ours before Keras binds the arguments
        # (it builds the layer from, and masks, the first one, `inputs`).
        kwargs = rename_keywords(self.call, args, kwargs, KERAS_HUB_CALL_NAMES)
        return super().__call__(*args, **kwargs)

    def call(
        self,
        inputs,
        encoder_outputs=None,
        padding_mask=None,
        attention_mask=None,
        encoder_padding_mask=None,
        encoder_attention_mask=None,
        *,
        self_attention_cache=None,
        cache_update_index=None,
        cross_attention_cache=None,
        self_attention_cache_update_index=None,
        cross_attention_cache_update_index=None,
        use_causal_mask=True,
        return_attention_scores=False,
        training=None,
    ):
        keras_hub_style = self_attention_cache_update_index is not None
        cache_update_index = _one_index(
            cache_update_index, self_attention_cache_update_index
        )
        self._check_call(
            inputs,
            encoder_outputs,
            padding_mask,
            attention_mask,
            encoder_padding_mask,
            encoder_attention_mask,
            self_attention_cache,
            cache_update_index,
            cross_attention_cache,
            cross_attention_cache_update_index,
        )
        # The implicit Keras masks are read before any cast drops them, and
        # put back afterwards (the attention sublayers detach their inputs').
        with kept_keras_masks(inputs, encoder_outputs) as implicit:
            if self_attention_cache is None:
                query_mask = key_mask = merge_masks(padding_mask, implicit[0])
            else:
                query_mask, key_mask = _cache_masks(
                    padding_mask,
                    implicit[0],
                    cache_batch_and_length(self_attention_cache)[1],
                    cache_update_index,
                    ops.shape(inputs)[1],
                )
            outputs = self._decode(
                inputs,
                encoder_outputs=encoder_outputs,
                query_mask=query_mask,
                key_mask=key_mask,
                attention_mask=attention_mask,
                encoder_padding_mask=merge_masks(
                    encoder_padding_mask, implicit[1]
                ),
                encoder_attention_mask=encoder_attention_mask,
                self_attention_cache=self_attention_cache,
                cache_update_index=cache_update_index,
                cross_attention_cache=cross_attention_cache,
                cross_attention_cache_update_index=(
                    cross_attention_cache_update_index
                ),
                use_causal_mask=use_causal_mask,
                return_attention_scores=return_attention_scores,
                training=training,
            )
        outputs, cross_attention_cache = outputs
        if keras_hub_style and cross_attention_cache is not None:
            # keras-hub's return structure: the cross cache comes back too.
            outputs += (cross_attention_cache,)
        return outputs[0] if len(outputs) == 1 else outputs

    def decode_step(
        self,
        inputs,
        *,
        self_attention_cache,
        cache_update_index,
        cross_attention_cache=None,
        encoder_padding_mask=None,
    ):
        """One step of incremental decoding, at inference.

        Computes what `call(inputs, self_attention_cache=...,
        cache_update_index=..., cross_attention_cache=...,
        encoder_padding_mask=..., training=False)` computes on heads-first
        caches (`keras_attention.ops.key_value_cache`), without the checks
        and Keras masks of `call`: the step a decoding loop runs.

        Args:
            inputs: float tensor `(B, T, F)`, the new tokens' hidden states.
            self_attention_cache: pair `(keys, values)` of `(B, N, L, H)`,
                e.g. `ops.empty_cache(B, N, L, H)` at the start.
            cache_update_index: int or scalar int tensor, the position of
                the first new token.
            cross_attention_cache: pair `(keys, values)` of `(B, N, S, H)`
                from `cross_attention.compute_key_value_cache(
                encoder_outputs)`; `None` in a decoder-only block.
            encoder_padding_mask: optional boolean tensor `(B, S)`.

        Returns:
            `(outputs, self_attention_cache)`: `(B, T, F)` and the updated
            pair.
        """
        (outputs, self_attention_cache), _ = self._decode(
            ops.convert_to_tensor(inputs),
            encoder_padding_mask=encoder_padding_mask,
            self_attention_cache=tuple(self_attention_cache),
            cache_update_index=cache_update_index,
            cross_attention_cache=(
                None
                if cross_attention_cache is None
                else tuple(cross_attention_cache)
            ),
            training=False,
        )
        return outputs, self_attention_cache

    def _decode(
        self,
        inputs,
        *,
        encoder_outputs=None,
        query_mask=None,
        key_mask=None,
        attention_mask=None,
        encoder_padding_mask=None,
        encoder_attention_mask=None,
        self_attention_cache=None,
        cache_update_index=None,
        cross_attention_cache=None,
        cross_attention_cache_update_index=None,
        use_causal_mask=True,
        return_attention_scores=False,
        training=None,
    ):
        """The block on either cache layout: returns `(outputs, cross
        cache)`, `outputs` the tuple `call` documents."""
        inputs, encoder_outputs = floating_inputs(
            self.compute_dtype, inputs, encoder_outputs
        )
        stacked = is_stacked_cache(self_attention_cache)
        if stacked:
            # keras-hub's stacked layout, through the heads-first one.
            self_attention_cache = from_stacked_cache(self_attention_cache)
        stacked_cross = is_stacked_cache(cross_attention_cache)
        if stacked_cross:
            cross_attention_cache = from_stacked_cache(cross_attention_cache)
        common = dict(
            query_mask=query_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        # Causal self-attention, optionally over the cached prefix.
        x, scores, self_attention_cache = self._attention_sublayer(
            "self_attention",
            inputs,
            value=None,
            cache=self_attention_cache,
            cache_update_index=cache_update_index,
            value_mask=key_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            **common,
        )
        if self.cross_attention is not None:
            # Encoder-decoder attention over the encoder outputs, or over
            # their keys and values projected once.
            x, cross_scores, cross_attention_cache = self._attention_sublayer(
                "cross_attention",
                x,
                value=encoder_outputs,
                cache=cross_attention_cache,
                cache_update_index=cross_attention_cache_update_index,
                value_mask=encoder_padding_mask,
                attention_mask=encoder_attention_mask,
                use_causal_mask=False,
                **common,
            )
            scores += cross_scores

        x = self._feedforward(x, training)
        outputs = (x,) + scores
        if self_attention_cache is not None:
            if stacked:
                self_attention_cache = to_stacked_cache(self_attention_cache)
            outputs += (self_attention_cache,)
        if stacked_cross:
            cross_attention_cache = to_stacked_cache(cross_attention_cache)
        return outputs, cross_attention_cache

    def _attention_sublayer(
        self, name, x, *, value, cache, cache_update_index, **arguments
    ):
        """The attention sublayer `name` (`"self_attention"` or
        `"cross_attention"`) in the residual stream.

        Attends from the (normalized) stream to `value`, or to the stream
        itself when `value` is `None`; with `cache`, over the cache, which
        `cache_update_index` (if not `None`) first updates. Returns `(x,
        scores, cache)`: the new stream, the attention weights as a tuple
        (empty unless asked for), and the cache (`None` without one).
        """
        attention = getattr(self, name)

        def attend(stream):
            if cache is None:
                result = attention(
                    stream,
                    stream if value is None else value,
                    **arguments,
                )
            else:
                result = attention.call_with_cache(
                    stream,
                    cache,
                    cache_update_index,
                    value=value,
                    **arguments,
                )
            return _split(result)

        x, extra = self._residual(name, x, attend, arguments["training"])
        if cache is not None:
            cache, extra = extra[-1], extra[:-1]
        return x, extra, cache

    def _check_call(
        self,
        inputs,
        encoder_outputs,
        padding_mask,
        attention_mask,
        encoder_padding_mask,
        encoder_attention_mask,
        self_attention_cache,
        cache_update_index,
        cross_attention_cache,
        cross_attention_cache_update_index=None,
    ):
        shape = static_shape(inputs)
        check_rank("inputs", shape, 3)
        cross_attention = getattr(self, "cross_attention", None)
        if cross_attention is None:
            given = {
                "encoder_outputs": encoder_outputs,
                "cross_attention_cache": cross_attention_cache,
                "encoder_padding_mask": encoder_padding_mask,
                "encoder_attention_mask": encoder_attention_mask,
            }
            for name, value in given.items():
                if value is not None:
                    raise ValueError(
                        "This TransformerDecoderBlock is decoder-only: it "
                        "was built without `encoder_outputs` and has no "
                        "cross-attention, so it takes no encoder inputs. "
                        f"Received: {name} with shape {static_shape(value)}"
                    )
        elif encoder_outputs is None and cross_attention_cache is None:
            raise ValueError(
                "This TransformerDecoderBlock was built with cross-attention "
                "and needs `encoder_outputs` or a `cross_attention_cache`. "
                "Received: encoder_outputs=None, cross_attention_cache=None"
            )
        if self_attention_cache is not None and cache_update_index is None:
            raise ValueError(
                "With `self_attention_cache`, pass `cache_update_index`, the "
                "position of the first token of `inputs`. Received: "
                "cache_update_index=None"
            )
        check_mask("inputs._keras_mask", keras_mask(inputs), shape[0], shape[1])
        keys, keys_name = shape[1], "inputs"
        if self_attention_cache is not None:
            keys = cache_batch_and_length(self_attention_cache)[1]
            keys_name = "self_attention_cache (batch, cache_length)"
        check_mask("padding_mask", padding_mask, shape[0], keys, keys_name)
        check_dims(
            "attention_mask",
            static_shape(attention_mask),
            (shape[0], shape[1], keys),
            "(batch, target_length, target_length), or (batch, "
            "target_length, cache_length) with a cache",
        )
        if cross_attention is None:
            return
        if (
            cross_attention_cache_update_index is not None
            and encoder_outputs is None
        ):
            raise ValueError(
                "`cross_attention_cache_update_index` (keras-hub's) writes the "
                "projected `encoder_outputs` into the cross-attention cache; "
                "pass `encoder_outputs`. Received: encoder_outputs=None, "
                "cross_attention_cache_update_index="
                f"{cross_attention_cache_update_index}"
            )
        if cross_attention_cache is not None:
            memory_shape = cache_batch_and_length(cross_attention_cache)
            memory_name = "cross_attention_cache"
        else:
            memory_shape = static_shape(encoder_outputs)
            memory_name = "encoder_outputs"
        check_mask(
            "encoder_padding_mask",
            encoder_padding_mask,
            memory_shape[0],
            memory_shape[1],
            memory_name,
        )
        check_mask(
            "encoder_outputs._keras_mask",
            keras_mask(encoder_outputs),
            memory_shape[0],
            memory_shape[1],
            memory_name,
        )
        check_dims(
            "encoder_attention_mask",
            static_shape(encoder_attention_mask),
            (shape[0], shape[1], memory_shape[1]),
            "(batch, target_length, source_length)",
        )

    def compute_cross_attention_cache(self, encoder_outputs):
        """Projects `encoder_outputs` `(B, S, F)` once into keys and values.

        Returns a cache `(B, 2, S, N, H)` to pass as `cross_attention_cache`
        at every decoding step.
        """
        if not self.built:
            raise ValueError(
                "Build the TransformerDecoderBlock (or call it once) before "
                "computing a cross-attention cache. Received: encoder_outputs "
                f"with shape {static_shape(encoder_outputs)}"
            )
        if self.cross_attention is None:
            raise ValueError(
                "This TransformerDecoderBlock is decoder-only (built without "
                "`encoder_outputs`): it has no cross-attention cache. "
                f"Received: encoder_outputs with shape "
                f"{static_shape(encoder_outputs)}"
            )
        return self.cross_attention.compute_cache(encoder_outputs)

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_spec(
        self,
        inputs,
        encoder_outputs=None,
        padding_mask=None,
        attention_mask=None,
        encoder_padding_mask=None,
        encoder_attention_mask=None,
        *,
        self_attention_cache=None,
        cache_update_index=None,
        cross_attention_cache=None,
        self_attention_cache_update_index=None,
        cross_attention_cache_update_index=None,
        use_causal_mask=True,
        return_attention_scores=False,
        training=None,
    ):
        cache_update_index = _one_index(
            cache_update_index, self_attention_cache_update_index
        )
        self._check_call(
            inputs,
            encoder_outputs,
            padding_mask,
            attention_mask,
            encoder_padding_mask,
            encoder_attention_mask,
            self_attention_cache,
            cache_update_index,
            cross_attention_cache,
            cross_attention_cache_update_index,
        )
        dtype = self.compute_dtype
        batch, length = inputs.shape[0], inputs.shape[1]
        outputs = (keras.KerasTensor(inputs.shape, dtype=dtype),)
        if return_attention_scores:
            keys = length
            if self_attention_cache is not None:
                keys = cache_batch_and_length(self_attention_cache)[1]
            outputs += (
                keras.KerasTensor(
                    (batch, self.num_heads, length, keys), dtype=dtype
                ),
            )
            if self.cross_attention is not None:
                if cross_attention_cache is not None:
                    sources = cache_batch_and_length(cross_attention_cache)[1]
                else:
                    sources = encoder_outputs.shape[1]
                outputs += (
                    keras.KerasTensor(
                        (batch, self.num_heads, length, sources), dtype=dtype
                    ),
                )
        caches = [self_attention_cache]
        if (
            self_attention_cache_update_index is not None
            and self.cross_attention is not None
        ):
            caches.append(cross_attention_cache)
        for cache in caches:
            if cache is not None:
                outputs += (
                    keras.tree.map_structure(
                        lambda x: keras.KerasTensor(x.shape, dtype=x.dtype),
                        cache,
                    ),
                )
        return outputs[0] if len(outputs) == 1 else outputs


def _cache_masks(padding_mask, implicit_mask, cache_length, index, length):
    """Query mask `(B, T)` and key mask `(B, L)` with a self-attention cache.

    `padding_mask` `(B, L)` marks the real cache slots; the new tokens sit
    at slots `index` to `index + T`, where their Keras mask `(B, T)` is
    ANDed in.
    """
    if padding_mask is None and implicit_mask is None:
        return None, None
    if padding_mask is None:
        batch = ops.shape(implicit_mask)[0]
        padding_mask = ops.ones((batch, cache_length), "bool")
    padding_mask = ops.cast(padding_mask, "bool")
    batch = ops.shape(padding_mask)[0]
    query_mask = ops.slice(padding_mask, [0, index], [batch, length])
    if implicit_mask is None:
        return query_mask, padding_mask
    query_mask = ops.logical_and(query_mask, ops.cast(implicit_mask, "bool"))
    return query_mask, slice_update(padding_mask, [0, index], query_mask)


def _split(result):
    """An attention result -> `(output, the rest as a tuple)`."""
    if isinstance(result, (tuple, list)):
        return result[0], tuple(result[1:])
    return result, ()


def _one_index(cache_update_index, self_attention_cache_update_index):
    """`cache_update_index`, given under our name or keras-hub's."""
    if self_attention_cache_update_index is None:
        return cache_update_index
    if cache_update_index is not None:
        raise ValueError(
            "Give `cache_update_index` or keras-hub's name for it, "
            "`self_attention_cache_update_index`, not both. Received: "
            f"cache_update_index={cache_update_index}, "
            "self_attention_cache_update_index="
            f"{self_attention_cache_update_index}"
        )
    return self_attention_cache_update_index
