"""Boolean masks and the masked softmax.

Every mask here is boolean with `True` meaning "keep". Masks are applied with
`where`, never by adding a large negative number, so they stay exact in
float16 and bfloat16.
"""

import ml_dtypes
from keras import ops

from keras_attention.utils.validation import static_shape


def large_negative(dtype):
    """The most negative finite value of a floating `dtype`.

    Used as the logit of masked positions. After the softmax subtracts the
    row maximum it may overflow to `-inf`, whose exponential is an exact zero,
    so no NaN can arise.
    """
    return float(ml_dtypes.finfo(_dtype_name(dtype)).min)


def masked_softmax(logits, mask=None, axis=-1):
    """Softmax over `axis` that gives masked positions exactly zero weight.

    ```
    weights = softmax(where(mask, logits, -inf), axis)   # with a finite -inf
    weights = where(mask, weights, 0)
    ```

    A row whose positions are all masked returns zeros, never NaN. Half
    precision logits are normalised in float32 and cast back.

    Args:
        logits: float tensor.
        mask: optional boolean tensor broadcastable to `logits`, `True` = keep.
        axis: int. The axis to normalise over. Defaults to `-1`.

    Returns:
        A tensor of the dtype and shape of `logits`.

    Example:

    >>> from keras import ops
    >>> logits = ops.zeros((1, 3))
    >>> mask = ops.convert_to_tensor([[True, True, False]])
    >>> w = masked_softmax(logits, mask)
    >>> [round(float(x), 2) for x in ops.convert_to_numpy(w)[0]]
    [0.5, 0.5, 0.0]
    """
    dtype = ops.dtype(logits)
    compute_dtype = "float32" if dtype in ("float16", "bfloat16") else dtype
    logits = ops.cast(logits, compute_dtype)
    if mask is None:
        return ops.cast(ops.softmax(logits, axis=axis), dtype)
    _check_broadcastable(mask, logits)
    mask = ops.cast(mask, "bool")
    logits = ops.where(mask, logits, large_negative(compute_dtype))
    weights = ops.where(mask, ops.softmax(logits, axis=axis), 0.0)
    return ops.cast(weights, dtype)


def _check_broadcastable(mask, logits):
    mask_shape, shape = static_shape(mask), static_shape(logits)
    if mask_shape is None or shape is None:
        return
    fits = len(mask_shape) <= len(shape) and all(
        m in (1, None) or s in (None, m)
        for m, s in zip(reversed(mask_shape), reversed(shape))
    )
    if not fits:
        raise ValueError(
            "Argument `mask` must be broadcastable to the shape of `logits`, "
            f"{shape}. Received: mask with shape {mask_shape}"
        )


def causal_mask(query_length, key_length=None, offset=0):
    """Lower-triangular mask of shape `(T, S)`.

    Query `t` sits at absolute position `t + offset` and may attend to key
    positions `s <= t + offset`. With a decoding cache, `offset` is the cache
    index of the first new token.

    Args:
        query_length: int or scalar tensor. `T`.
        key_length: int or scalar tensor. `S`. Defaults to `query_length`.
        offset: int or scalar tensor. Absolute position of query 0.

    Returns:
        A boolean tensor of shape `(T, S)`.
    """
    rows, cols = _positions(query_length, key_length, offset)
    return ops.greater_equal(rows, cols)


def local_mask(query_length, key_length=None, window_size=1, offset=0):
    """Band mask of shape `(T, S)`: keys within `window_size` of the query.

    Query `t` (absolute position `t + offset`) keeps key `s` when
    `|t + offset - s| <= window_size`. This is the restricted self-attention
    of the Transformer paper (section 4), with `r = window_size`.

    Args:
        query_length: int or scalar tensor. `T`.
        key_length: int or scalar tensor. `S`. Defaults to `query_length`.
        window_size: int. `r`, the largest distance kept.
        offset: int or scalar tensor. Absolute position of query 0.

    Returns:
        A boolean tensor of shape `(T, S)`.
    """
    rows, cols = _positions(query_length, key_length, offset)
    return ops.less_equal(ops.abs(rows - cols), window_size)


def pairwise_mask(query_mask=None, key_mask=None):
    """Combines per-sequence masks `(B, T)` and `(B, S)` into `(B, T, S)`.

    Either may be `None`; the result is `None` when both are. With only one,
    the result broadcasts: `(B, T, 1)` or `(B, 1, S)`.
    """
    if query_mask is None and key_mask is None:
        return None
    if key_mask is None:
        return ops.expand_dims(ops.cast(query_mask, "bool"), -1)
    key_mask = ops.expand_dims(ops.cast(key_mask, "bool"), -2)
    if query_mask is None:
        return key_mask
    return ops.logical_and(
        ops.expand_dims(ops.cast(query_mask, "bool"), -1), key_mask
    )


def merge_masks(*masks):
    """Logical AND of the masks that are not `None` (broadcasting)."""
    result = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        result = mask if result is None else ops.logical_and(result, mask)
    return result


def _positions(query_length, key_length, offset):
    key_length = query_length if key_length is None else key_length
    # (T, 1) absolute query positions against (1, S) key positions.
    rows = ops.expand_dims(ops.arange(query_length, dtype="int32"), -1)
    rows = rows + ops.cast(offset, "int32")
    cols = ops.expand_dims(ops.arange(key_length, dtype="int32"), 0)
    return rows, cols


def _dtype_name(dtype):
    # Accepts strings, NumPy dtypes and backend dtypes ("torch.float16").
    return str(getattr(dtype, "name", dtype)).replace("torch.", "")
