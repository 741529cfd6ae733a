"""Scaled dot-product attention on `keras.ops`."""

import math

import keras
from keras import ops

from keras_attention.ops.masking import causal_mask
from keras_attention.ops.masking import masked_softmax
from keras_attention.utils.dtypes import dtype_name
from keras_attention.utils.optional import import_optional


def attention_logits(subscripts, x, y):
    """`einsum(subscripts, x, y)`, computed in float32 for float16 inputs.

    Attention logits are sums of products of activations. In float16 they
    pass the largest finite value (65504) once activations reach a few
    hundred, and the softmax of an infinite logit is NaN. The logits of
    float16 inputs are therefore float32 (`masked_softmax` normalises half
    precision in float32 anyway); other dtypes are kept.
    """
    if "float16" in (dtype_name(x.dtype), dtype_name(y.dtype)):
        x, y = ops.cast(x, "float32"), ops.cast(y, "float32")
    return ops.einsum(subscripts, x, y)


def scaled_dot_product_attention(
    query,
    key,
    value,
    mask=None,
    scale=None,
    dropout=0.0,
    training=False,
    seed=None,
    return_attention_scores=False,
    flash_attention=None,
    is_causal=False,
):
    """Multi-head scaled dot-product attention (Vaswani et al., eq. 1).

    ```
    logits  = einsum("btnh,bsnh->bnts", query, key) * scale
    weights = masked_softmax(logits, mask)          # (B, N, T, S)
    output  = einsum("bnts,bsnh->btnh", weights, value)
    ```

    With no weights requested, no dropout in effect and value heads as wide
    as key heads, the work goes to
    `keras.ops.dot_product_attention`, which uses the backend's fused kernel
    (flash attention where the backend, device and arguments allow). The
    explicit path above computes the same values and is used otherwise.

    Masking: `mask` is boolean, `True` = keep. A query row whose keys are all
    masked gets zero weights and a zero output on both paths, never NaN.

    Args:
        query: tensor of shape `(B, T, N, H)`.
        key: tensor of shape `(B, S, N, H)`.
        value: tensor of shape `(B, S, N, Hv)`.
        mask: optional boolean tensor broadcastable to `(B, T, S)` (shared
            by all heads), or of rank 4, broadcastable to `(B, N, T, S)`
            (one mask per head).
        scale: float. Multiplies the logits. Defaults to `1 / sqrt(H)`.
        dropout: float in `[0, 1)`. Dropout rate on the attention weights,
            applied only when `training` is true.
        training: bool. Whether dropout is in effect.
        seed: a `keras.random.SeedGenerator` (or int) for the dropout.
        return_attention_scores: bool. Also return the weights `(B, N, T, S)`
            (after the softmax, before dropout).
        flash_attention: `None` (let the backend choose), `True` or `False`.
            Passed to `keras.ops.dot_product_attention`.
        is_causal: bool. Query `t` attends only to keys `s <= t`. Without
            any other mask this takes the backends' causal kernels and never
            builds a `(T, S)` mask.

    Returns:
        `output` of shape `(B, T, N, Hv)`, or `(output, weights)` when
        `return_attention_scores` is true.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    use_dropout = bool(training) and dropout > 0.0
    if mask is not None:
        mask = ops.cast(mask, "bool")
        while len(mask.shape) < 4:
            mask = ops.expand_dims(mask, -3)  # (B, 1, T, S), shared by heads
        if is_causal:
            causal = causal_mask(ops.shape(query)[1], ops.shape(key)[1])
            mask = ops.logical_and(mask, causal)
            is_causal = False

    # jax's fused kernel needs value heads as wide as key heads.
    same_width = value.shape[-1] == query.shape[-1]
    # float16 takes the explicit path, whose logits are float32, unless the
    # backend's fused kernel on this device accumulates in float32 itself
    # (see `fused_float16_is_safe`). bfloat16 has float32's range and stays
    # fused everywhere.
    unsafe_float16 = dtype_name(
        query.dtype
    ) == "float16" and not fused_float16_is_safe(
        keras.backend.backend(), device_platform(query)
    )
    fused = not (return_attention_scores or use_dropout or unsafe_float16)
    if same_width and fused:
        return _fused_attention(
            query, key, value, mask, scale, flash_attention, is_causal
        )

    # (B, N, T, S) logits; the query is scaled first, as keras.layers does.
    query = ops.multiply(query, ops.cast(scale, query.dtype))
    logits = attention_logits("btnh,bsnh->bnts", query, key)
    if is_causal:
        mask = causal_mask(ops.shape(query)[1], ops.shape(key)[1])[None, None]
    weights = ops.cast(masked_softmax(logits, mask, axis=-1), value.dtype)
    dropped = weights
    if use_dropout:
        dropped = keras.random.dropout(weights, dropout, seed=seed)
    output = ops.einsum("bnts,bsnh->btnh", dropped, value)
    if return_attention_scores:
        return output, weights
    return output


def single_query_attention(
    query, key, value, mask=None, scale=None, heads_first=False
):
    """Scaled dot-product attention of one query per sequence, the shape of
    decoding one token with a key/value cache.

    Computes what `scaled_dot_product_attention` computes at `T = 1`, with
    products and sums over the keys in place of batched matrix products:

    ```
    logits  = sum(query[:, 0, None] * key, axis=-1) * scale  # (B, S, N)
    weights = masked_softmax(logits, mask, axis=1)           # over the keys
    output  = sum(weights[..., None] * value, axis=1)        # (B, N, Hv)
    ```

    Each key and value is read once, in the `(B, S, N, H)` layout a cache
    keeps them in. The batched products of `scaled_dot_product_attention`
    (a `(1, H) @ (H, S)` product per sequence and head) first copy the keys
    and values into a heads-first layout; on a CPU (XLA and tensorflow)
    that copy of the whole cache, at every decoding step and layer, costs
    more than the arithmetic of a single query.

    A cache kept heads first, `(B, N, S, H)` (`heads_first=True`), needs no
    copy: the logits and the output are then batched matrix products, one
    `(1, H) @ (H, S)` and one `(1, S) @ (S, Hv)` per sequence and head,
    and the softmax runs over the last axis. The decoding searches keep
    their caches so; `benchmarks/transformer_decoding.py` times them
    (benchmarks/README.md).

    Masking: `mask` is boolean, `True` = keep. A query whose keys are all
    masked gets zero weights and a zero output, never NaN. Half precision
    logits and the softmax are computed in float32.

    Args:
        query: tensor of shape `(B, 1, N, H)`.
        key: tensor of shape `(B, S, N, H)`, or `(B, N, S, H)` with
            `heads_first=True`.
        value: tensor of shape `(B, S, N, Hv)`, or `(B, N, S, Hv)` with
            `heads_first=True`.
        mask: optional boolean tensor broadcastable to `(B, 1, S)` (shared
            by all heads), or of rank 4, broadcastable to `(B, N, 1, S)`
            (one mask per head), as for `scaled_dot_product_attention`.
        scale: float. Multiplies the logits. Defaults to `1 / sqrt(H)`.
        heads_first: bool. Whether `key` and `value` have the heads axis
            before the keys axis.

    Returns:
        `output` of shape `(B, 1, N, Hv)`, in the dtype of `value`.

    Example:

    >>> from keras import ops
    >>> query = ops.ones((2, 1, 4, 8))
    >>> keys = ops.ones((2, 5, 4, 8))
    >>> mask = ops.arange(5) < 3  # the first three cache slots are filled
    >>> ops.shape(single_query_attention(query, keys, keys, mask[None, None]))
    (2, 1, 4, 8)

    References:
        [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762), eq. 1.
    """
    length = query.shape[1]
    if len(query.shape) != 4 or length not in (1, None):
        raise ValueError(
            "`single_query_attention` takes one query per sequence: `query` "
            "must have shape (batch, 1, num_heads, head_width). Received: "
            f"query with shape {tuple(query.shape)}"
        )
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    dtype = value.dtype
    compute_dtype = query.dtype
    if dtype_name(compute_dtype) in ("float16", "bfloat16"):
        compute_dtype = "float32"
    query = ops.cast(query, compute_dtype) * ops.cast(scale, compute_dtype)
    if mask is not None:
        mask = ops.cast(mask, "bool")
        while len(mask.shape) < 4:
            mask = ops.expand_dims(mask, -3)  # (B, 1, 1, S)
    if heads_first:
        return _heads_first_single_query(query, key, value, mask)
    # (B, 1, N, H) * (B, S, N, H) -> (B, S, N): one logit per key and head.
    logits = ops.sum(query * ops.cast(key, compute_dtype), axis=-1)
    if mask is not None:
        # (B, N|1, 1, S) -> (B, S, N|1), the layout of the logits.
        mask = ops.transpose(mask[:, :, 0, :], (0, 2, 1))
    weights = masked_softmax(logits, mask, axis=1)
    # (B, S, N, 1) * (B, S, N, Hv) -> (B, N, Hv) -> (B, 1, N, Hv)
    weights = ops.cast(ops.expand_dims(weights, -1), dtype)
    return ops.expand_dims(ops.sum(weights * value, axis=1), 1)


def _heads_first_single_query(query, key, value, mask):
    """`single_query_attention` of a scaled query `(B, 1, N, H)` (in the
    logits' dtype) over keys `(B, N, S, H)` and values `(B, N, S, Hv)`,
    with a boolean rank-4 `mask` or `None`."""
    _, _, heads, width = query.shape
    # With one query, (B, 1, N, H) and (B, N, 1, H) are the same memory.
    query = ops.reshape(query, (-1, heads, 1, width))
    logits = ops.einsum(
        "bnth,bnsh->bnts", query, ops.cast(key, query.dtype)
    )  # (B, N, 1, S)
    weights = ops.cast(masked_softmax(logits, mask, axis=-1), value.dtype)
    output = ops.einsum("bnts,bnsh->bnth", weights, value)  # (B, N, 1, Hv)
    return ops.reshape(output, (-1, 1, heads, value.shape[-1]))


def _fused_attention(
    query, key, value, mask, scale, flash_attention, is_causal
):
    if mask is None:
        return ops.dot_product_attention(
            query,
            key,
            value,
            scale=scale,
            is_causal=is_causal,
            flash_attention=flash_attention,
        )
    # The fused kernels turn a fully masked row into a uniform average (or
    # NaN on some backends). Open such rows to every key, then zero them.
    has_key = ops.any(mask, axis=-1, keepdims=True)  # (B, N|1, T, 1)
    mask = ops.logical_or(mask, ops.logical_not(has_key))
    output = ops.dot_product_attention(
        query,
        key,
        value,
        mask=mask,  # (B, N|1, T, S)
        scale=scale,
        flash_attention=flash_attention,
    )
    # (B, N|1, T, 1) -> (B, T, N|1, 1) to broadcast over heads and width.
    has_key = ops.transpose(has_key, (0, 2, 1, 3))
    return ops.where(has_key, output, ops.zeros_like(output))


# (backend, device platform) pairs whose fused attention kernel computes
# float16 logits and softmax in float32: jax's cuDNN / XLA GPU kernels
# (preferred_element_type float32) and torch's CUDA flash and
# memory-efficient kernels. Everywhere else the fused path loses float16:
# tensorflow's keeps float16 logits on every device, torch's CPU kernel
# loses real-token values once inputs reach ~1e4, and jax's compiled CPU
# path refuses float16 ("precision F16_F16_F32 is not supported").
_SAFE_FLOAT16_KERNELS = {("jax", "gpu"), ("torch", "cuda")}


def fused_float16_is_safe(backend, platform):
    """Whether the fused attention kernel is safe for float16 inputs.

    Args:
        backend: str. The Keras backend, `"tensorflow"`, `"jax"` or
            `"torch"`.
        platform: str. The device platform of the inputs, as
            `device_platform` returns it (`"cpu"`, `"gpu"` for jax,
            `"cuda"` for torch, ...).

    Returns:
        bool. `True` where the backend's fused kernel on that device
        accumulates the logits and softmax in float32; float16 attention
        then takes the fused path, and the explicit path (float32 logits)
        otherwise.
    """
    return (backend, platform) in _SAFE_FLOAT16_KERNELS


def device_platform(x):
    """The device platform of tensor `x` (`"cpu"`, `"gpu"`, `"cuda"`, ...).

    torch reads the tensor's device; jax the default backend (inside `jit`
    the array has no device yet); tensorflow always answers `"cpu"` or
    `"gpu"` from the tensor's device string and is never fused in float16.
    """
    backend = keras.backend.backend()
    if backend == "torch":
        return str(getattr(getattr(x, "device", None), "type", "cpu"))
    if backend == "jax":
        jax = import_optional("jax", "jax", "The jax backend")
        return jax.default_backend()
    device = str(getattr(x, "device", "") or "").lower()
    return "gpu" if "gpu" in device else "cpu"
