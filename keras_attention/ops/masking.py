"""Boolean masks and the masked softmax.

Every mask here is boolean with `True` meaning "keep". Masks are applied with
`where`, never by adding a large negative number, so they stay exact in
float16 and bfloat16.
"""

import ml_dtypes
from keras import ops

from keras_attention.utils.dtypes import dtype_name
from keras_attention.utils.validation import static_shape


def large_negative(dtype):
    """The most negative finite value of a floating `dtype`.

    Used as the logit of masked positions. After the softmax subtracts the
    row maximum it may overflow to `-inf`, whose exponential is an exact zero,
    so no NaN can arise.
    """
    return float(ml_dtypes.finfo(dtype_name(dtype)).min)


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


def masked_sum(inputs, mask, keepdims=False):
    """Sum of `inputs` `(B, T, F)` over the tokens where `mask` `(B, T)`.

    ```
    total[b] = sum_t where(mask[b, t], inputs[b, t], 0)
    ```

    Args:
        inputs: float tensor `(B, T, F)`.
        mask: boolean tensor `(B, T)`, `True` = real token.
        keepdims: bool. Return `(B, 1, F)` instead of `(B, F)`. Defaults
            to `False`.

    Returns:
        `(B, F)` (or `(B, 1, F)`) in the dtype of `inputs`.

    Example:

    >>> x = keras.ops.ones((2, 3, 4))
    >>> mask = keras.ops.array([[1, 1, 0], [1, 0, 0]]) > 0
    >>> keras.ops.shape(masked_sum(x, mask))
    (2, 4)
    """
    keep = ops.expand_dims(ops.cast(mask, "bool"), -1)  # (B, T, 1)
    kept = ops.where(keep, inputs, ops.zeros_like(inputs))
    return ops.sum(kept, axis=1, keepdims=keepdims)


def masked_mean(inputs, mask, keepdims=False):
    """Mean of `inputs` `(B, T, F)` over the tokens where `mask` `(B, T)`.

    ```
    count[b] = sum_t mask[b, t]
    mean[b] = sum_t where(mask[b, t], inputs[b, t], 0) / max(count[b], 1)
    ```

    A row with no real token gives zeros. Half-precision inputs are summed
    in float32 (a float16 sum of a few tokens of size 1e4 overflows) and
    the mean is returned in the dtype of `inputs`. Arguments and shapes are
    those of `masked_sum`.

    Example:

    >>> x = keras.ops.ones((2, 3, 4))
    >>> mask = keras.ops.array([[1, 1, 0], [0, 0, 0]]) > 0
    >>> keras.ops.convert_to_numpy(masked_mean(x, mask))[:, 0].tolist()
    [1.0, 0.0]
    """
    dtype = dtype_name(inputs.dtype)
    compute = "float32" if dtype in ("float16", "bfloat16") else dtype
    inputs = ops.cast(inputs, compute)
    total = masked_sum(inputs, mask, keepdims=keepdims)
    count = ops.sum(ops.cast(mask, compute), axis=1, keepdims=True)  # (B, 1)
    if keepdims:
        count = ops.expand_dims(count, -1)  # (B, 1, 1)
    return ops.cast(total / ops.maximum(count, 1.0), dtype)


def _positions(query_length, key_length, offset):
    key_length = query_length if key_length is None else key_length
    # (T, 1) absolute query positions against (1, S) key positions.
    rows = ops.expand_dims(ops.arange(query_length, dtype="int32"), -1)
    rows = rows + ops.cast(offset, "int32")
    cols = ops.expand_dims(ops.arange(key_length, dtype="int32"), 0)
    return rows, cols
