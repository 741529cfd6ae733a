import math
import string
import warnings

import keras
from keras import ops

from keras_attention.ops import causal_mask
from keras_attention.ops import from_stacked_cache
from keras_attention.ops import local_mask
from keras_attention.ops import merge_masks
from keras_attention.ops import pairwise_mask
from keras_attention.ops import scaled_dot_product_attention
from keras_attention.ops import single_query_attention
from keras_attention.ops import to_stacked_cache
from keras_attention.ops import update_cache
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.initializers import clone_initializer
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.validation import check_dims
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rate
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention, a drop-in for `keras.layers.MultiHeadAttention`.

    Projects the query, key and value into `num_heads` heads, runs scaled
    dot-product attention in each, and projects the concatenated heads back:

    ```
    q = einsum("btf,fnh->btnh", query, query_kernel)   # (B, T, N, H)
    k = einsum("bsf,fnh->bsnh", key, key_kernel)       # (B, S, N, H)
    v = einsum("bsf,fnh->bsnh", value, value_kernel)   # (B, S, N, Hv)
    weights = masked_softmax(q . k / sqrt(H), mask)    # (B, N, T, S)
    output = einsum("btnh,nhf->btf", weights . v, output_kernel)
    ```

    The constructor, call signature, sublayer names (`query`, `key`,
    `value`, `gate`, `attention_output`), weight shapes, weight order and
    weight-file paths are those of `keras.layers.MultiHeadAttention`: Keras's
    own test module for that layer runs against this class
    (`tests/layers/keras_multi_head_attention_test.py`), weights load from
    files written with Keras's class and back, `DTypePolicyMap`s keyed by
    Keras's paths apply, and `quantize("int8")` and `enable_lora` work on
    the projections. Subclasses may override `_compute_attention`, the
    override point Keras documents. On top of Keras's layer, this one adds a
    key/value cache for incremental decoding.

    Inputs may have any rank `>= 3`, `(B, ..., F)`; `attention_axes` names
    the axes attended over (default: all but the batch and feature axes,
    attended jointly). The other axes are batch axes.

    The key bias is kept for weight compatibility, but it adds `q . b_k` to
    every logit of a query row, which the softmax cancels: it never receives
    a gradient.

    Masking: the attention mask is the AND of `attention_mask`, the
    per-sequence `query_mask`, `value_mask` and `key_mask` (filled in by Keras
    from the inputs' Keras masks when not given), the causal mask when
    `use_causal_mask=True`, and the band `|t - s| < sliding_window`.
    `attention_mask` broadcasts as in Keras: its shape is the scores' shape
    `(B, N, T, S)` without or with the heads axis, and with any leading axes
    of size 1 or left out, e.g. `(T, S)`, `(1, T, S)`, `(B, T, S)`,
    `(B, N, T, S)`. Masked keys get exactly zero weight. The output carries
    the query's Keras mask.

    Differences from `keras.layers.MultiHeadAttention`, on purpose:
    - A query row with no key left (for example a padded query) gets zero
      weights and a zero attention output, so the layer output there is the
      output bias; Keras's layer averages all values there instead.
    - float16 logits and softmax are computed in float32 (Keras's overflow
      past 65504 and give NaN); the backends' fused kernels are used in
      float16 only where they accumulate in float32 themselves (jax on GPU,
      torch on CUDA).
    - The decoding cache below.
    - Per-sequence masks, `use_causal_mask` and `sliding_window` with inputs
      of rank > 3 need a single attention axis (Keras builds them from axis
      1 whatever the attention axes); otherwise pass `attention_mask`.
    - The heads' dropout draws from one `keras.random.SeedGenerator` (no
      `Dropout` sublayer), created only when `dropout > 0`.

    Decoding cache (rank-3 inputs): `call_with_cache` attends over a
    heads-first `(keys, values)` pair `(B, N, S, H)`, the one cache layout
    of this package (`keras_attention.ops.key_value_cache`). keras-hub's
    stacked form is accepted too: pass `cache` of shape `(B, 2, S, N, H)`
    holding the projected keys (`cache[:, 0]`) and values (`cache[:, 1]`).
    - Self-attention: pass the new tokens as `query` and `value` and their
      first position as `cache_update_index`. Their keys and values are
      written into the cache at that index and the queries attend over the
      whole cache; with `use_causal_mask=True` the causal mask is offset by
      `cache_update_index`, so empty cache slots are never seen and the
      outputs equal those of full causal attention.
    - Cross-attention: pass a cache filled once (for instance with
      `compute_cache(value)`) and leave `cache_update_index=None`; the key
      and value inputs are then not projected again.
    The call then returns `(output, cache)`. It runs `call_with_cache`
    between `ops.from_stacked_cache` and `ops.to_stacked_cache`.

    Args:
        num_heads: int. Number of attention heads, `N`.
        key_dim: int. Width of each query and key head, `H`.
        value_dim: int. Width of each value head. Defaults to `key_dim`.
        dropout: float. Dropout rate on the attention weights. Defaults to
            `0.0`.
        use_bias: bool. Whether the projections have biases. Defaults to
            `True`.
        output_shape: int or tuple. Trailing shape of the output. Defaults
            to the query's last dimension.
        attention_axes: `None`, an int or a tuple of ints. The input axes
            attended over. Defaults to every axis but the batch and feature
            axes.
        sliding_window: int. If set, query `t` attends only to keys `s`
            with `|t - s| < sliding_window`; with `use_causal_mask=True` to
            itself and the `sliding_window - 1` keys before it. The
            Transformer paper's restricted self-attention with neighbourhood
            `r` is `sliding_window=r + 1`. Defaults to `None`.
        flash_attention: `None`, `True` or `False`. Passed to
            `keras.ops.dot_product_attention`. Defaults to `None` (the backend
            chooses).
        kernel_initializer: initializer for the projection kernels. Defaults
            to `"glorot_uniform"`.
        bias_initializer: initializer for the biases. Defaults to `"zeros"`.
        kernel_regularizer: regularizer for the kernels. Defaults to `None`.
        bias_regularizer: regularizer for the biases. Defaults to `None`.
        activity_regularizer: regularizer for the projections' outputs.
            Defaults to `None`.
        kernel_constraint: constraint for the kernels. Defaults to `None`.
        bias_constraint: constraint for the biases. Defaults to `None`.
        use_gate: bool. Multiply the attention output by a sigmoid gate
            computed from the query, as `keras.layers.MultiHeadAttention` does.
            Defaults to `False`.
        seed: int. Seed for the attention dropout. Defaults to `None`.
        **kwargs: base layer arguments (`name`, `dtype`, ...). The name
            `window_size` (`sliding_window - 1`) of release 0.1 is still
            accepted, with a `DeprecationWarning`.

    Call arguments:
        query: tensor of shape `(B, T, F)` (or `(B, ..., F)`).
        value: tensor of shape `(B, S, Fv)`.
        key: optional tensor of shape `(B, S, Fk)`. Defaults to `value`.
        query_mask: optional boolean tensor `(B, T)`.
        value_mask: optional boolean tensor `(B, S)`.
        key_mask: optional boolean tensor `(B, S)`.
        attention_mask: optional boolean tensor broadcastable to the scores
            `(B, N, T, S)`, see Masking; `True` = attend.
        return_attention_scores: bool. Also return the attention weights.
        training: bool. Whether dropout is in effect.
        use_causal_mask: bool. Query `t` attends only to keys `s <= t`.
        cache: optional tensor `(B, 2, S, N, H)`, see above.
        cache_update_index: optional int or scalar int tensor, see above.

    Returns:
        `output` of shape `(B, T, F)`; followed by the attention weights
        `(B, N, T, S)` when `return_attention_scores=True`; followed by the
        updated cache when `cache` is given.

    Example:

    >>> layer = MultiHeadAttention(num_heads=2, key_dim=4)
    >>> x = keras.random.normal((3, 5, 8))
    >>> y = layer(x, x, use_causal_mask=True)
    >>> keras.ops.shape(y)
    (3, 5, 8)

    In a model, with padding masks coming from the embedding:

    ```python
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(1000, 64, mask_zero=True)(tokens)
    x = MultiHeadAttention(num_heads=4, key_dim=16)(x, x)
    model = keras.Model(tokens, x)
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          sections 3.2 and 4.
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_shape=None,
        attention_axes=None,
        sliding_window=None,
        flash_attention=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        use_gate=False,
        seed=None,
        **kwargs,
    ):
        window_size = kwargs.pop("window_size", None)
        check_positive_int("num_heads", num_heads)
        check_positive_int("key_dim", key_dim)
        check_positive_int("value_dim", value_dim, allow_none=True)
        check_rate("dropout", dropout)
        check_positive_int("sliding_window", sliding_window, allow_none=True)
        if window_size is not None:
            check_positive_int("window_size", window_size)
            if sliding_window is not None:
                raise ValueError(
                    "Give `sliding_window` only; `window_size` is its "
                    "deprecated name. Received: "
                    f"window_size={window_size}, "
                    f"sliding_window={sliding_window}"
                )
            warnings.warn(
                "`window_size` is deprecated: pass "
                f"sliding_window={window_size + 1} (the same band, "
                "|t - s| < sliding_window). Received: "
                f"window_size={window_size}",
                DeprecationWarning,
                stacklevel=2,
            )
            sliding_window = window_size + 1
        self._output_dims = _output_dims(output_shape)
        self._axes = _axes_tuple(attention_axes)
        if flash_attention and dropout > 0.0:
            raise ValueError(
                "Dropout is not supported when flash attention is enabled. "
                f"Received: flash_attention={flash_attention}, "
                f"dropout={dropout}; set dropout=0.0 to use flash attention."
            )
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim or key_dim
        self.dropout = dropout
        self.use_bias = use_bias
        self.output_shape = (
            tuple(output_shape)
            if isinstance(output_shape, list)
            else output_shape
        )
        self.attention_axes = self._axes
        self.sliding_window = sliding_window
        self.flash_attention = flash_attention
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        # Applied to the projections, as Keras does, not to this layer's
        # output (a public `activity_regularizer` would do both).
        self._projection_activity_regularizer = keras.regularizers.get(
            activity_regularizer
        )
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.use_gate = use_gate
        self.seed = seed
        # No random state without dropout, as in Keras.
        self.seed_generator = (
            keras.random.SeedGenerator(seed) if dropout > 0.0 else None
        )
        self.supports_masking = True

    # The sublayers live in private attributes behind read-only properties,
    # as in Keras: weight files store each sublayer under the attribute
    # Keras walks first, so this layout gives files of the same paths.
    @property
    def query_dense(self):
        return self._query_dense

    @property
    def key_dense(self):
        return self._key_dense

    @property
    def value_dense(self):
        return self._value_dense

    @property
    def output_dense(self):
        return self._output_dense

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        query_shape, value_shape, key_shape = (
            tuple(query_shape),
            tuple(value_shape),
            tuple(key_shape),
        )
        _check_input_shapes(query_shape, value_shape, key_shape)
        rank = self._rank = len(query_shape)
        self._attention_axes = _resolve_axes(self._axes, rank)
        self._input_dims = {
            "query": query_shape[-1],
            "value": value_shape[-1],
            "key": key_shape[-1],
        }
        heads = (self.num_heads, self.key_dim)
        value_heads = (self.num_heads, self.value_dim)
        # Built in the order of keras.layers.MultiHeadAttention, so weight
        # lists line up: query, key, [gate], value, output.
        self._query_dense = self._projection("query", heads, query_shape)
        self._key_dense = self._projection("key", heads, key_shape)
        if self.use_gate:
            self._gate_dense = self._projection(
                "gate", value_heads, query_shape, activation="sigmoid"
            )
        self._value_dense = self._projection("value", value_heads, value_shape)
        output_dims = self._output_dims or (query_shape[-1],)
        # (B, ..., N, Hv) -> (B, ..., *output_dims). For rank 3 the letters
        # ("abcd,cde->abe") follow axis order, which jax compiles with fewer
        # transposes than "btnh,nhf->btf".
        free = _letters(0, rank - 1)
        bound = _letters(rank - 1, 2)
        out = _letters(rank + 1, len(output_dims))
        self._output_dense = keras.layers.EinsumDense(
            f"{free}{bound},{bound}{out}->{free}{out}",
            output_shape=(None,) * (rank - 2) + tuple(output_dims),
            bias_axes=out if self.use_bias else None,
            name="attention_output",
            **self._sublayer_kwargs(),
        )
        self._output_dense.build(query_shape[:-1] + value_heads)
        self.built = True

    def _projection(self, name, heads, input_shape, activation=None):
        # (B, ..., F) -> (B, ..., N, H)
        rank = len(input_shape)
        free = _letters(0, rank - 1)
        feature = _letters(rank - 1, 1)
        out = _letters(rank, 2)
        dense = keras.layers.EinsumDense(
            f"{free}{feature},{feature}{out}->{free}{out}",
            output_shape=(None,) * (rank - 2) + heads,
            bias_axes=out if self.use_bias else None,
            activation=activation,
            name=name,
            **self._sublayer_kwargs(),
        )
        dense.build(input_shape)
        return dense

    def _sublayer_kwargs(self):
        # A fresh initializer object per sublayer, so two same-shaped kernels
        # never share values.
        return dict(
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
            activity_regularizer=self._projection_activity_regularizer,
            kernel_constraint=self.kernel_constraint,
            bias_constraint=self.bias_constraint,
            dtype=self.dtype_policy,
        )

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
        cache=None,
        cache_update_index=None,
    ):
        key = value if key is None else key
        self._check_inputs(query, value, key, cache, attention_mask)
        self._check_masks(
            query,
            key,
            cache,
            query_mask,
            value_mask,
            key_mask,
            use_causal_mask,
        )
        # Keras already passed the inputs' masks in as *_mask arguments.
        drop_keras_masks(query, value, key)
        query, value, key = floating_inputs(
            self.compute_dtype, query, value, key
        )

        if cache is not None:
            # keras-hub's stacked cache, through the heads-first one.
            result = self.call_with_cache(
                query,
                from_stacked_cache(cache),
                cache_update_index=cache_update_index,
                value=value,
                key=key,
                query_mask=query_mask,
                value_mask=value_mask,
                key_mask=key_mask,
                attention_mask=attention_mask,
                use_causal_mask=use_causal_mask,
                return_attention_scores=return_attention_scores,
                training=training,
            )
            return result[:-1] + (to_stacked_cache(result[-1]),)
        gate = self._gate_dense(query) if self.use_gate else None
        # (B, T, F) -> (B, T, N, H)
        q = self._query_dense(query)
        k = self._key_dense(key)  # (B, S, N, H)
        v = self._value_dense(value)  # (B, S, N, Hv)
        output, scores = self._attend_heads(
            q,
            k,
            v,
            gate,
            cached=False,
            offset=0,
            query_mask=query_mask,
            key_side_mask=merge_masks(value_mask, key_mask),
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        if return_attention_scores:
            return output, scores
        return output

    def call_with_cache(
        self,
        query,
        cache,
        cache_update_index=None,
        value=None,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        """Attention over a key/value cache: one step of incremental
        decoding.

        The cache is a heads-first pair `(keys (B, N, S, H), values (B, N,
        S, Hv))`, the layout of `keras_attention.ops.key_value_cache`
        (`compute_key_value_cache` fills one from a sequence, `ops.
        empty_cache` gives an empty one).

        - Self-attention: pass the new tokens as `query` and their first
          position as `cache_update_index`. Their keys and values (of
          `value` and `key`, which default to `query`) are written into
          the cache there, and the queries attend over the whole cache;
          with `use_causal_mask=True` the causal mask is offset by
          `cache_update_index`, so empty slots are never seen and the
          outputs equal those of full causal attention.
        - Cross-attention: pass a cache filled once with
          `compute_key_value_cache(encoder_outputs)` and leave
          `cache_update_index=None`; it is used as it is.

        One query per sequence (`T = 1`, the shape of a decoding step,
        without scores or dropout) attends with `ops.single_query_attention(
        ..., heads_first=True)`: batched matrix products on the cache as it
        is. Otherwise `_compute_attention` runs on a `(B, S, N, H)` view.
        `call(..., cache=...)` with keras-hub's stacked `(B, 2, S, N, H)`
        cache runs this method between `ops.from_stacked_cache` and
        `ops.to_stacked_cache`.

        Args:
            query: float tensor `(B, T, F)`.
            cache: pair `(keys (B, N, S, H), values (B, N, S, Hv))`.
            cache_update_index: int or scalar int tensor, the position of
                the first query; `None` uses the cache as it is.
            value: optional tensor `(B, T, Fv)` whose projected values are
                written. Defaults to `query`.
            key: optional tensor `(B, T, Fk)`. Defaults to `value`.
            query_mask: optional boolean tensor `(B, T)`.
            value_mask: optional boolean tensor `(B, S)` over the cache
                slots.
            key_mask: optional boolean tensor `(B, S)`, ANDed with
                `value_mask`.
            attention_mask: optional boolean tensor broadcastable to `(B,
                N, T, S)`.
            use_causal_mask: bool. Query `t` sees only slots `s <=
                cache_update_index + t`.
            return_attention_scores: bool. Also return the weights `(B, N,
                T, S)`.
            training: bool. Whether dropout is in effect.

        Returns:
            `(output, cache)`, or `(output, scores, cache)` with
            `return_attention_scores=True`: `output` `(B, T, F)` and the
            updated pair.

        Example:

        >>> from keras import ops
        >>> from keras_attention.ops import empty_cache
        >>> layer = MultiHeadAttention(num_heads=2, key_dim=4)
        >>> x = keras.random.normal((3, 5, 8))
        >>> _ = layer(x, x)  # builds the layer
        >>> cache = empty_cache(3, 2, 5, 4)
        >>> for t in range(5):
        ...     y, cache = layer.call_with_cache(
        ...         x[:, t : t + 1], cache, t, use_causal_mask=True
        ...     )
        >>> ops.shape(y), ops.shape(cache[0])
        ((3, 1, 8), (3, 2, 5, 4))
        """
        self._check_cache(query, cache)
        value = query if value is None else value
        key = value if key is None else key
        # Masks are the explicit arguments only; Keras masks on the inputs
        # would only make the projections warn.
        drop_keras_masks(query, value, key)
        query, value, key = floating_inputs(
            self.compute_dtype, query, value, key
        )
        gate = self._gate_dense(query) if self.use_gate else None
        q = self._query_dense(query)  # (B, T, N, H)
        if cache_update_index is not None:
            cache = update_cache(
                cache,
                self._key_dense(key),
                self._value_dense(value),
                cache_update_index,
            )
        # One new token per step, as the searches decode, unless a subclass
        # overrides the attention (Keras's override point).
        single_query = (
            q.shape[1] == 1
            and not return_attention_scores
            and not (training and self.dropout > 0.0)
            and type(self)._compute_attention
            is MultiHeadAttention._compute_attention
        )
        keys, values = cache
        if not single_query:
            keys = ops.swapaxes(keys, 1, 2)  # (B, S, N, H)
            values = ops.swapaxes(values, 1, 2)
        output, scores = self._attend_heads(
            q,
            keys,
            values,
            gate,
            cached=True,
            offset=0 if cache_update_index is None else cache_update_index,
            query_mask=query_mask,
            key_side_mask=merge_masks(value_mask, key_mask),
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
            single_query=single_query,
        )
        if return_attention_scores:
            return output, scores, cache
        return output, cache

    def _attend_heads(
        self,
        q,
        k,
        v,
        gate,
        cached,
        offset,
        query_mask,
        key_side_mask,
        attention_mask,
        use_causal_mask,
        return_attention_scores,
        training,
        single_query=False,
    ):
        """Projected heads -> `(output (B, T, F), scores or None)`: the
        masks, the attention, the gate and the output projection.

        `single_query=True` (one query per sequence, no scores, no dropout)
        takes `single_query_attention` on `k` and `v` kept heads first,
        `(B, N, S, H)`, as `call_with_cache` keeps them."""
        # Causal alone (no cache offset, band or padding) takes the backends'
        # causal kernels instead of a materialised mask. As in Keras, not for
        # subclasses that override `_compute_attention` with the older
        # signature: they get the materialised mask.
        causal_only = (
            use_causal_mask
            and not cached
            and self.sliding_window is None
            and query_mask is None
            and key_side_mask is None
            and attention_mask is None
            and type(self)._compute_attention
            is MultiHeadAttention._compute_attention
        )
        mask = None
        if not causal_only:
            mask = self._compute_attention_mask(
                q,
                k,
                offset=offset,
                heads_first=single_query,
                query_mask=query_mask,
                key_side_mask=key_side_mask,
                attention_mask=attention_mask,
                use_causal_mask=use_causal_mask,
            )
        if single_query:
            attended, scores = (
                single_query_attention(
                    q,
                    k,
                    v,
                    mask,
                    scale=1.0 / math.sqrt(self.key_dim),
                    heads_first=True,
                ),
                None,
            )
        else:
            extra = {"use_causal_mask": True} if causal_only else {}
            attended, scores = self._compute_attention(
                q, k, v, mask, training, return_attention_scores, **extra
            )
        if gate is not None:
            attended = attended * gate
        # (B, T, N, Hv) -> (B, T, F)
        return self._output_dense(attended), scores

    def _compute_attention(
        self,
        query,
        key,
        value,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        use_causal_mask=False,
    ):
        """Attention of projected heads: the override point Keras documents.

        Args:
            query: tensor `(B, T, N, H)` (`(B, ..., N, H)` for inputs of
                rank > 3).
            key: tensor `(B, S, N, H)`.
            value: tensor `(B, S, N, Hv)`.
            attention_mask: optional boolean tensor broadcastable to the
                scores, as for `call`.
            training: bool. Whether dropout is in effect.
            return_attention_scores: bool. Whether to compute the scores.
            use_causal_mask: bool. Also apply the causal mask.

        Returns:
            `(output, scores)`: `(B, T, N, Hv)` and `(B, N, T, S)`; scores
            are `None` when not requested.
        """
        if self.flash_attention and return_attention_scores:
            raise ValueError(
                "Returning attention scores is not supported when flash "
                "attention is enabled. Please disable flash attention to "
                "access attention scores. Received: flash_attention=True, "
                "return_attention_scores=True"
            )
        attend = self._attend if len(query.shape) == 4 else self._attend_folded
        return attend(
            query,
            key,
            value,
            attention_mask,
            training,
            return_attention_scores,
            use_causal_mask,
        )

    def _attend(
        self,
        query,
        key,
        value,
        mask,
        training,
        return_attention_scores,
        use_causal_mask,
    ):
        # (B, T, N, H) heads; mask broadcastable to (B, [N,] T, S).
        result = scaled_dot_product_attention(
            query,
            key,
            value,
            mask=mask,
            scale=1.0 / math.sqrt(self.key_dim),
            dropout=self.dropout,
            training=training,
            seed=self.seed_generator,
            return_attention_scores=return_attention_scores,
            flash_attention=self.flash_attention,
            is_causal=use_causal_mask,
        )
        if return_attention_scores:
            return result
        return result, None

    def _attend_folded(
        self,
        query,
        key,
        value,
        mask,
        training,
        return_attention_scores,
        use_causal_mask,
    ):
        # Heads of rank > 4, (B, ..., N, H): the batch axes are folded into
        # one batch axis and the attention axes into one sequence axis, the
        # attention runs as for rank 3, and the result is unfolded.
        rank = len(query.shape) - 1  # rank of the layer's inputs
        axes = _resolve_axes(self._axes, rank)
        batch_axes = [i for i in range(rank - 1) if i not in axes]
        order = batch_axes + list(axes) + [rank - 1, rank]
        nb, na = len(batch_axes), len(axes)

        def fold(x):
            x = ops.transpose(x, order)  # (b..., t..., N, H)
            shape = ops.shape(x)
            flat = (
                math.prod(shape[:nb]),
                math.prod(shape[nb : nb + na]),
            ) + tuple(shape[-2:])
            return ops.reshape(x, flat), shape

        q, q_shape = fold(query)
        k, k_shape = fold(key)
        v, v_shape = fold(value)
        batch, queries = math.prod(q_shape[:nb]), q_shape[nb : nb + na]
        keys = k_shape[nb : nb + na]
        if mask is not None:
            mask = _expand_to_scores(ops.cast(mask, "bool"), nb, na)
            heads = mask.shape[nb]
            target = tuple(q_shape[:nb]) + (heads,) + tuple(queries)
            mask = ops.broadcast_to(mask, target + tuple(keys))
            mask = ops.reshape(
                mask, (batch, heads, math.prod(queries), math.prod(keys))
            )
        output, scores = self._attend(
            q,
            k,
            v,
            mask,
            training,
            return_attention_scores,
            use_causal_mask,
        )
        # (B', T', N, Hv) -> (b..., t..., N, Hv) -> the input's axis order.
        output = ops.reshape(
            output, tuple(q_shape[:-1]) + (ops.shape(value)[-1],)
        )
        output = ops.transpose(output, _inverse(order))
        if scores is not None:
            # (B', N, T', S') -> (b..., N, t..., s...), Keras's layout.
            scores = ops.reshape(
                scores,
                tuple(q_shape[:nb])
                + (self.num_heads,)
                + tuple(queries)
                + tuple(keys),
            )
        return output, scores

    def compute_cache(self, value, key=None):
        """Projects `key` and `value` once into keras-hub's stacked cache
        `(B, 2, S, N, H)`.

        Use it for encoder-decoder attention, whose keys and values do not
        change while decoding; pass the result as `cache` with
        `cache_update_index=None`. `compute_key_value_cache` gives the same
        keys and values heads first, for `call_with_cache`.
        """
        return ops.stack(self._project_key_value(value, key), axis=1)

    def compute_key_value_cache(self, value, key=None):
        """Projects `key` (defaults to `value`) and `value` `(B, S, F)`
        once into a heads-first cache `(keys (B, N, S, H), values (B, N, S,
        Hv))` for `call_with_cache`.
        """
        return tuple(
            ops.swapaxes(x, 1, 2) for x in self._project_key_value(value, key)
        )

    def _project_key_value(self, value, key=None):
        """`(keys (B, S, N, H), values (B, S, N, Hv))` for a cache."""
        key = value if key is None else key
        return self._key_dense(key), self._value_dense(value)

    def _compute_attention_mask(
        self,
        query,
        key,
        offset,
        query_mask,
        key_side_mask,
        attention_mask,
        use_causal_mask,
        heads_first=False,
    ):
        # `query` and `key` are the projected heads (B, ..., N, H), or a
        # heads-first key (B, N, S, H) of rank-3 inputs. Every piece is
        # brought to one rank of Keras's scores layout, (b..., [N,] t...,
        # s...), by inserting axes at the heads axis.
        rank = len(query.shape) - 1
        na = len(_resolve_axes(self._axes, rank))
        structural = None
        if use_causal_mask or self.sliding_window is not None:
            # A single attention axis (checked in call).
            axis = _resolve_axes(self._axes, rank)[0]
            query_length = ops.shape(query)[axis]
            key_length = ops.shape(key)[axis + 1 if heads_first else axis]
            if use_causal_mask:
                structural = causal_mask(query_length, key_length, offset)
            if self.sliding_window is not None:
                band = local_mask(
                    query_length, key_length, self.sliding_window - 1, offset
                )
                structural = merge_masks(structural, band)
        pieces = [
            attention_mask,
            pairwise_mask(query_mask, key_side_mask),
            structural,
        ]
        pieces = [ops.cast(p, "bool") for p in pieces if p is not None]
        if not pieces:
            return None
        target = max(len(p.shape) for p in pieces)
        return merge_masks(
            *[_insert_head_axes(p, target - len(p.shape), na) for p in pieces]
        )

    def _check_cache(self, query, cache):
        if not self.built:
            raise ValueError(
                "Build the MultiHeadAttention layer (or call it once) before "
                "`call_with_cache`. Received: query with shape "
                f"{static_shape(query)}"
            )
        shape = static_shape(query)
        if len(shape) != 3 or self._rank != 3:
            raise ValueError(
                "A decoding cache needs inputs of rank 3, (batch, length, "
                f"features). Received: query with shape {shape}"
            )
        if not isinstance(cache, (tuple, list)) or len(cache) != 2:
            raise ValueError(
                "Argument `cache` must be a pair (keys, values) of heads-first "
                "tensors (batch, num_heads, length, key_dim); keras-hub's "
                "stacked (batch, 2, length, num_heads, key_dim) goes to "
                f"`call(..., cache=...)`. Received: cache={cache!r}"
            )
        for name, part, width in (
            ("cache[0]", cache[0], self.key_dim),
            ("cache[1]", cache[1], self.value_dim),
        ):
            check_dims(
                name,
                static_shape(part),
                (None, self.num_heads, None, width),
                f"(batch, {self.num_heads}, length, {width})",
            )

    def _check_inputs(self, query, value, key, cache, attention_mask):
        shapes = {
            "query": static_shape(query),
            "value": static_shape(value),
            "key": static_shape(key),
        }
        rank = self._rank
        for name, shape in shapes.items():
            if len(shape) != rank:
                raise ValueError(
                    f"Argument `{name}` must have rank {rank}, the rank the "
                    f"layer was built with. Received: {name} with shape "
                    f"{shape}"
                )
            built = self._input_dims[name]
            if built is not None and shape[-1] not in (None, built):
                raise ValueError(
                    f"The last dimension of `{name}` must be {built}, the "
                    "size the layer was built with. Received: "
                    f"{name} with shape {shape}"
                )
        _check_input_shapes(shapes["query"], shapes["value"], shapes["key"])
        if cache is not None:
            if rank != 3:
                raise ValueError(
                    "A decoding cache needs inputs of rank 3, (batch, length, "
                    f"features). Received: query with shape {shapes['query']}"
                )
            if self.value_dim != self.key_dim:
                raise ValueError(
                    "A cache holds keys and values in one tensor, so it needs "
                    f"value_dim == key_dim. Received: value_dim="
                    f"{self.value_dim}, key_dim={self.key_dim}"
                )
            check_dims(
                "cache",
                static_shape(cache),
                (None, 2, None, self.num_heads, self.key_dim),
                f"(batch, 2, length, {self.num_heads}, {self.key_dim})",
            )
        if attention_mask is not None:
            key_shape = shapes["key"]
            if cache is not None:
                cache_shape = static_shape(cache)
                key_shape = (cache_shape[0], cache_shape[2], None)
            _check_attention_mask(
                static_shape(attention_mask),
                _scores_shape(
                    shapes["query"],
                    key_shape,
                    self.num_heads,
                    self._attention_axes,
                ),
                len(self._attention_axes),
            )

    def _check_masks(
        self,
        query,
        key,
        cache,
        query_mask,
        value_mask,
        key_mask,
        use_causal_mask,
    ):
        query_shape = static_shape(query)
        if len(query_shape) > 3:
            given = [
                name
                for name, mask in (
                    ("query_mask", query_mask),
                    ("value_mask", value_mask),
                    ("key_mask", key_mask),
                )
                if mask is not None
            ]
            if len(self._attention_axes) > 1:
                if use_causal_mask:
                    given.append("use_causal_mask")
                if self.sliding_window is not None:
                    given.append("sliding_window")
            elif not given:
                return
            if given:
                raise ValueError(
                    f"{', '.join(f'`{g}`' for g in given)} need rank-3 inputs "
                    "(per-sequence masks) or a single attention axis (causal "
                    "and band masks); pass `attention_mask` instead. "
                    f"Received: query with shape {query_shape}, "
                    f"attention_axes={self._attention_axes}"
                )
            return
        check_mask("query_mask", query_mask, *query_shape[:2], "query")
        if cache is None:
            key_shape, source = static_shape(key)[:2], "key"
        else:
            cache_shape = static_shape(cache)
            key_shape, source = (cache_shape[0], cache_shape[2]), "cache"
        check_mask("value_mask", value_mask, *key_shape, source)
        check_mask("key_mask", key_mask, *key_shape, source)

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        query_shape = tuple(query_shape)
        value_shape = tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        _check_input_shapes(query_shape, value_shape, key_shape)
        output_dims = self._output_dims or query_shape[-1:]
        return query_shape[:-1] + tuple(output_dims)

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
        cache=None,
        cache_update_index=None,
    ):
        key = value if key is None else key
        dtype = self.compute_dtype
        shape = self.compute_output_shape(query.shape, value.shape, key.shape)
        outputs = (keras.KerasTensor(shape, dtype=dtype),)
        if return_attention_scores:
            key_shape = tuple(key.shape)
            if cache is not None:
                key_shape = (cache.shape[0], cache.shape[2], None)
            axes = _resolve_axes(self._axes, len(query.shape))
            scores = _scores_shape(
                tuple(query.shape), key_shape, self.num_heads, axes
            )
            outputs += (keras.KerasTensor(scores, dtype=dtype),)
        if cache is not None:
            outputs += (keras.KerasTensor(cache.shape, dtype=cache.dtype),)
        return outputs[0] if len(outputs) == 1 else outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_shape": self.output_shape,
                "attention_axes": self.attention_axes,
                "sliding_window": self.sliding_window,
                "flash_attention": self.flash_attention,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
                "bias_regularizer": keras.regularizers.serialize(
                    self.bias_regularizer
                ),
                "activity_regularizer": keras.regularizers.serialize(
                    self._projection_activity_regularizer
                ),
                "kernel_constraint": keras.constraints.serialize(
                    self.kernel_constraint
                ),
                "bias_constraint": keras.constraints.serialize(
                    self.bias_constraint
                ),
                "use_gate": self.use_gate,
                "seed": self.seed,
            }
        )
        return config


def _letters(start, count):
    return string.ascii_lowercase[start : start + count]


def _output_dims(output_shape):
    """`output_shape` as a tuple of positive ints, or `None`."""
    if output_shape is None:
        return None
    dims = (output_shape,) if isinstance(output_shape, int) else output_shape
    if not isinstance(dims, (list, tuple)) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims
    ):
        raise ValueError(
            "Invalid `output_shape`: it must be a positive int or a tuple or "
            f"list of them. Received: output_shape={output_shape!r}"
        )
    return tuple(dims)


def _axes_tuple(attention_axes):
    if attention_axes is None:
        return None
    axes = (
        (attention_axes,) if isinstance(attention_axes, int) else attention_axes
    )
    if not isinstance(axes, (list, tuple)) or not all(
        isinstance(a, int) and not isinstance(a, bool) for a in axes
    ):
        raise ValueError(
            "Argument `attention_axes` must be None, an int or a tuple of "
            f"ints. Received: attention_axes={attention_axes!r}"
        )
    return tuple(axes)


def _resolve_axes(axes, rank):
    """The attention axes of inputs of `rank`, as sorted non-negative ints.

    Negative axes count as Keras counts them, from the end of the projected
    heads `(B, ..., N, H)`: `-2` is the last axis before the features.
    """
    if axes is None:
        return tuple(range(1, rank - 1))
    resolved = tuple(sorted(a if a >= 0 else rank + a for a in axes))
    if any(a < 1 or a > rank - 2 for a in resolved) or len(
        set(resolved)
    ) != len(resolved):
        raise ValueError(
            "Argument `attention_axes` must name distinct axes of the inputs "
            f"other than the batch axis 0 and the feature axis {rank - 1}. "
            f"Received: attention_axes={axes} for inputs of rank {rank}"
        )
    return resolved


def _check_input_shapes(query_shape, value_shape, key_shape):
    if tuple(value_shape[1:-1]) != tuple(key_shape[1:-1]):
        raise ValueError(
            "All dimensions of `value` and `key` but the last must be equal. "
            f"Received: value with shape {tuple(value_shape)}, key with "
            f"shape {tuple(key_shape)}"
        )
    if len(query_shape) < 3 or len(query_shape) != len(value_shape):
        raise ValueError(
            "`query` and `value` must have the same rank, at least 3: "
            "(batch, ..., features). Received: query with shape "
            f"{tuple(query_shape)}, value with shape {tuple(value_shape)}"
        )


def _scores_shape(query_shape, key_shape, num_heads, axes):
    """Keras's scores layout: (batch axes..., N, query axes..., key axes...)."""
    rank = len(query_shape)
    batch_axes = [i for i in range(rank - 1) if i not in axes]
    return (
        tuple(query_shape[i] for i in batch_axes)
        + (num_heads,)
        + tuple(query_shape[i] for i in axes)
        + tuple(key_shape[i] for i in axes)
    )


def _insert_head_axes(mask, count, num_attention_axes):
    # Axes of size 1 before the query axes, where Keras inserts them.
    for _ in range(count):
        mask = ops.expand_dims(mask, -2 * num_attention_axes - 1)
    return mask


def _expand_to_scores(mask, num_batch_axes, num_attention_axes):
    rank = num_batch_axes + 1 + 2 * num_attention_axes
    return _insert_head_axes(mask, rank - len(mask.shape), num_attention_axes)


def _check_attention_mask(mask_shape, scores_shape, num_attention_axes):
    if mask_shape is None:
        return
    expanded = list(mask_shape)
    position = len(expanded) - 2 * num_attention_axes
    if position >= 0:
        while len(expanded) < len(scores_shape):
            expanded.insert(position, 1)
    fits = len(expanded) == len(scores_shape) and all(
        m in (1, None) or s in (None, m) for m, s in zip(expanded, scores_shape)
    )
    if not fits:
        raise ValueError(
            "Argument `attention_mask` must broadcast to the attention "
            f"scores' shape {scores_shape} (batch, heads, queries, keys), "
            "with the heads and leading axes optional. Received: "
            f"attention_mask with shape {tuple(mask_shape)}"
        )


def _inverse(order):
    inverse = [0] * len(order)
    for position, axis in enumerate(order):
        inverse[axis] = position
    return inverse
