import keras
from keras import ops

from keras_attention.ops import causal_mask
from keras_attention.ops import local_mask
from keras_attention.ops import merge_masks
from keras_attention.ops import pairwise_mask
from keras_attention.ops import scaled_dot_product_attention
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.validation import check_dims
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rank
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

    The constructor, call signature, weight shapes and weight order are those
    of `keras.layers.MultiHeadAttention`, so
    `ours.set_weights(theirs.get_weights())` reproduces its outputs. On top
    of it, this layer adds a key/value cache for incremental decoding and
    local (restricted) attention with `window_size`.

    The key bias is kept for that weight compatibility, but it adds
    `q . b_k` to every logit of a query row, which the softmax cancels: it
    never receives a gradient.

    Masking: the attention mask is the AND of `attention_mask`, the
    per-sequence `query_mask`, `value_mask` and `key_mask` (filled in by Keras
    from the inputs' Keras masks when not given), the causal mask when
    `use_causal_mask=True`, and the band `|t - s| <= window_size`. Masked keys
    get exactly zero weight. A query row with no key left (for example a
    padded query) gets zero weights and a zero attention output, so the layer
    output there is the output bias; `keras.layers.MultiHeadAttention`
    instead averages all values there. The output carries the query's Keras
    mask.

    Decoding cache: pass `cache` of shape `(B, 2, S, N, H)` holding the
    projected keys (`cache[:, 0]`) and values (`cache[:, 1]`).
    - Self-attention: pass the new tokens as `query` and `value` and their
      first position as `cache_update_index`. Their keys and values are
      written into the cache at that index and the queries attend over the
      whole cache; with `use_causal_mask=True` the causal mask is offset by
      `cache_update_index`, so empty cache slots are never seen and the
      outputs equal those of full causal attention.
    - Cross-attention: pass a cache filled once (for instance with
      `compute_cache(value)`) and leave `cache_update_index=None`; the key
      and value inputs are then not projected again.
    The call then returns `(output, cache)`.

    Args:
        num_heads: int. Number of attention heads, `N`.
        key_dim: int. Width of each query and key head, `H`.
        value_dim: int. Width of each value head. Defaults to `key_dim`.
        dropout: float. Dropout rate on the attention weights. Defaults to
            `0.0`.
        use_bias: bool. Whether the projections have biases. Defaults to
            `True`.
        output_shape: int or 1-tuple. Width of the output. Defaults to the
            query's last dimension.
        attention_axes: `None` or the sequence axis (`1` or `-2`): attention
            runs over axis 1 of rank-3 inputs. Kept for compatibility with
            `keras.layers.MultiHeadAttention`.
        window_size: int. If set, query `t` attends only to keys `s` with
            `|t - s| <= window_size` (the paper's restricted self-attention
            with neighbourhood `r`). Defaults to `None` (no restriction).
        sliding_window: int. The same band in Keras's convention:
            `|t - s| < sliding_window`, i.e. `window_size = sliding_window - 1`.
            Give at most one of the two. Defaults to `None`.
        flash_attention: `None`, `True` or `False`. Passed to
            `keras.ops.dot_product_attention`. Defaults to `None` (the backend
            chooses).
        kernel_initializer: initializer for the projection kernels. Defaults
            to `"glorot_uniform"`.
        bias_initializer: initializer for the biases. Defaults to `"zeros"`.
        kernel_regularizer: regularizer for the kernels. Defaults to `None`.
        bias_regularizer: regularizer for the biases. Defaults to `None`.
        kernel_constraint: constraint for the kernels. Defaults to `None`.
        bias_constraint: constraint for the biases. Defaults to `None`.
        use_gate: bool. Multiply the attention output by a sigmoid gate
            computed from the query, as `keras.layers.MultiHeadAttention` does.
            Defaults to `False`.
        seed: int. Seed for the attention dropout. Defaults to `None`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        query: tensor of shape `(B, T, F)`.
        value: tensor of shape `(B, S, Fv)`.
        key: optional tensor of shape `(B, S, Fk)`. Defaults to `value`.
        query_mask: optional boolean tensor `(B, T)`.
        value_mask: optional boolean tensor `(B, S)`.
        key_mask: optional boolean tensor `(B, S)`.
        attention_mask: optional boolean tensor `(B, T, S)`, `True` = attend.
        cache: optional tensor `(B, 2, S, N, H)`, see above.
        cache_update_index: optional int or scalar int tensor, see above.
        return_attention_scores: bool. Also return the attention weights.
        training: bool. Whether dropout is in effect.
        use_causal_mask: bool. Query `t` attends only to keys `s <= t`.

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
        window_size=None,
        sliding_window=None,
        flash_attention=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        use_gate=False,
        seed=None,
        **kwargs,
    ):
        check_positive_int("num_heads", num_heads)
        check_positive_int("key_dim", key_dim)
        check_positive_int("value_dim", value_dim, allow_none=True)
        check_rate("dropout", dropout)
        check_positive_int("window_size", window_size, allow_none=True)
        check_positive_int("sliding_window", sliding_window, allow_none=True)
        if window_size is not None and sliding_window is not None:
            raise ValueError(
                "Give at most one of `window_size` and `sliding_window`. "
                f"Received: window_size={window_size}, "
                f"sliding_window={sliding_window}"
            )
        if isinstance(output_shape, (list, tuple)):
            if len(output_shape) != 1:
                raise ValueError(
                    "Argument `output_shape` must be an int or a 1-tuple. "
                    f"Received: output_shape={output_shape!r}"
                )
            output_shape = output_shape[0]
        check_positive_int("output_shape", output_shape, allow_none=True)
        if isinstance(attention_axes, (list, tuple)):
            attention_axes = tuple(attention_axes)
        if attention_axes not in (None, 1, -2, (1,), (-2,)):
            raise ValueError(
                "Argument `attention_axes` must be None or the sequence axis "
                "(1 or -2); inputs are (batch, sequence, features). "
                f"Received: attention_axes={attention_axes!r}"
            )
        if flash_attention and dropout > 0.0:
            raise ValueError(
                "Dropout on the attention weights cannot run in the flash "
                "kernel. Received: flash_attention=True, "
                f"dropout={dropout}"
            )
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.dropout = dropout
        self.use_bias = use_bias
        self.output_shape = output_shape
        self.attention_axes = attention_axes
        self.window_size = window_size
        self.sliding_window = sliding_window
        self.flash_attention = flash_attention
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.use_gate = use_gate
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.supports_masking = True
        # The band half-width actually applied, in the paper's convention.
        self._window = (
            sliding_window - 1 if sliding_window is not None else window_size
        )
        self._value_width = value_dim or key_dim

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        check_rank("query", query_shape, 3)
        check_rank("value", value_shape, 3)
        check_rank("key", key_shape, 3)
        if value_shape[1] is not None and key_shape[1] is not None:
            check_dims(
                "key",
                key_shape,
                (None, value_shape[1], None),
                f"(batch, {value_shape[1]}, features) like `value`",
            )
        self._input_dims = {
            "query": query_shape[-1],
            "value": value_shape[-1],
            "key": key_shape[-1],
        }
        heads = (self.num_heads, self.key_dim)
        value_heads = (self.num_heads, self._value_width)
        # Built in the order of keras.layers.MultiHeadAttention, so weight
        # lists line up: query, key, [gate], value, output.
        self.query_dense = self._projection("query_dense", heads, query_shape)
        self.key_dense = self._projection("key_dense", heads, key_shape)
        self.gate_dense = None
        if self.use_gate:
            self.gate_dense = self._projection(
                "gate_dense", value_heads, query_shape, activation="sigmoid"
            )
        self.value_dense = self._projection(
            "value_dense", value_heads, value_shape
        )
        output_width = self.output_shape or query_shape[-1]
        # (B, T, N, Hv) -> (B, T, F). The letters follow axis order, which
        # jax compiles with fewer transposes than "btnh,nhf->btf".
        self.output_dense = keras.layers.EinsumDense(
            "abcd,cde->abe",
            output_shape=(None, output_width),
            bias_axes="e" if self.use_bias else None,
            name="output_dense",
            **self._sublayer_kwargs(),
        )
        self.output_dense.build((query_shape[0], query_shape[1]) + value_heads)
        self.built = True

    def _projection(self, name, heads, input_shape, activation=None):
        # (B, T, F) -> (B, T, N, H)
        dense = keras.layers.EinsumDense(
            "abc,cde->abde",
            output_shape=(None,) + heads,
            bias_axes="de" if self.use_bias else None,
            activation=activation,
            name=name,
            **self._sublayer_kwargs(),
        )
        dense.build(input_shape)
        return dense

    def _sublayer_kwargs(self):
        # A fresh initializer object per sublayer, so two same-shaped kernels
        # never share values.
        def clone(initializer):
            return initializer.__class__.from_config(initializer.get_config())

        return dict(
            kernel_initializer=clone(self.kernel_initializer),
            bias_initializer=clone(self.bias_initializer),
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
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
        cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
    ):
        key = value if key is None else key
        self._check_inputs(query, value, key, cache, attention_mask)
        self._check_masks(query, key, cache, query_mask, value_mask, key_mask)
        # Keras already passed the inputs' masks in as *_mask arguments.
        drop_keras_masks(query, value, key)
        query, value, key = floating_inputs(
            self.compute_dtype, query, value, key
        )

        # (B, T, F) -> (B, T, N, H)
        q = self.query_dense(query)
        if cache is not None and cache_update_index is None:
            # Cross-attention with keys and values projected once.
            k, v = cache[:, 0], cache[:, 1]  # (B, S, N, H) each
        else:
            k = self.key_dense(key)  # (B, S, N, H)
            v = self.value_dense(value)  # (B, S, N, Hv)
            if cache is not None:
                start = [0, cache_update_index, 0, 0]
                k = ops.slice_update(
                    cache[:, 0], start, ops.cast(k, cache.dtype)
                )
                v = ops.slice_update(
                    cache[:, 1], start, ops.cast(v, cache.dtype)
                )
                cache = ops.stack([k, v], axis=1)  # (B, 2, S, N, H)

        # Causal alone (no cache offset, band or padding) takes the backends'
        # causal kernels instead of a materialised mask.
        causal_only = (
            use_causal_mask
            and cache is None
            and self._window is None
            and query_mask is None
            and value_mask is None
            and key_mask is None
            and attention_mask is None
        )
        mask = self._attention_mask(
            query_length=ops.shape(q)[1],
            key_length=ops.shape(k)[1],
            offset=0 if cache_update_index is None else cache_update_index,
            query_mask=query_mask,
            key_side_mask=merge_masks(value_mask, key_mask),
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask and not causal_only,
        )
        attended = scaled_dot_product_attention(
            q,
            k,
            v,
            mask=mask,
            scale=1.0 / self.key_dim**0.5,
            dropout=self.dropout,
            training=training,
            seed=self.seed_generator,
            return_attention_scores=return_attention_scores,
            flash_attention=self.flash_attention,
            is_causal=causal_only,
        )
        if return_attention_scores:
            attended, scores = attended
        if self.gate_dense is not None:
            attended = attended * self.gate_dense(query)
        # (B, T, N, Hv) -> (B, T, F)
        output = self.output_dense(attended)

        outputs = (output,)
        if return_attention_scores:
            outputs += (scores,)
        if cache is not None:
            outputs += (cache,)
        return outputs[0] if len(outputs) == 1 else outputs

    def compute_cache(self, value, key=None):
        """Projects `key` and `value` once into a cache `(B, 2, S, N, H)`.

        Use it for encoder-decoder attention, whose keys and values do not
        change while decoding; pass the result as `cache` with
        `cache_update_index=None`.
        """
        key = value if key is None else key
        k = self.key_dense(key)  # (B, S, N, H)
        v = self.value_dense(value)  # (B, S, N, Hv)
        return ops.stack([k, v], axis=1)

    def _attention_mask(
        self,
        query_length,
        key_length,
        offset,
        query_mask,
        key_side_mask,
        attention_mask,
        use_causal_mask,
    ):
        # Every piece broadcasts to (B, T, S).
        structural = None
        if use_causal_mask:
            structural = causal_mask(query_length, key_length, offset)
        if self._window is not None:
            band = local_mask(query_length, key_length, self._window, offset)
            structural = merge_masks(structural, band)
        return merge_masks(
            attention_mask,
            pairwise_mask(query_mask, key_side_mask),
            None if structural is None else ops.expand_dims(structural, 0),
        )

    def _check_inputs(self, query, value, key, cache, attention_mask):
        shapes = {
            "query": static_shape(query),
            "value": static_shape(value),
            "key": static_shape(key),
        }
        for name, shape in shapes.items():
            check_rank(name, shape, 3)
            built = self._input_dims[name]
            if built is not None and shape[-1] not in (None, built):
                raise ValueError(
                    f"The last dimension of `{name}` must be {built}, the "
                    "size the layer was built with. Received: "
                    f"{name} with shape {shape}"
                )
        if attention_mask is not None:
            length = shapes["key"][1] if cache is None else None
            check_dims(
                "attention_mask",
                static_shape(attention_mask),
                (shapes["query"][0], shapes["query"][1], length),
                "(batch, query_length, key_length)",
            )
        if cache is not None:
            if self._value_width != self.key_dim:
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

    def _check_masks(self, query, key, cache, query_mask, value_mask, key_mask):
        query_shape = static_shape(query)
        check_mask("query_mask", query_mask, *query_shape[:2], "query")
        if cache is None:
            key_shape, source = static_shape(key)[:2], "key"
        else:
            cache_shape = static_shape(cache)
            key_shape, source = (cache_shape[0], cache_shape[2]), "cache"
        check_mask("value_mask", value_mask, *key_shape, source)
        check_mask("key_mask", key_mask, *key_shape, source)

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
    ):
        key = value if key is None else key
        batch, query_length = query.shape[0], query.shape[1]
        key_length = key.shape[1] if cache is None else cache.shape[2]
        width = self.output_shape or query.shape[-1]
        dtype = self.compute_dtype
        outputs = (
            keras.KerasTensor((batch, query_length, width), dtype=dtype),
        )
        if return_attention_scores:
            shape = (batch, self.num_heads, query_length, key_length)
            outputs += (keras.KerasTensor(shape, dtype=dtype),)
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
                "window_size": self.window_size,
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
