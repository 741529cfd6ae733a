"""Multi-dimensional (feature-wise) attention of DiSAN and ReSAN.

In multi-dimensional attention every feature has its own alignment score,
so the softmax over tokens runs separately per feature and the weights have
shape `(B, T, S, F)` instead of `(B, T, S)`. That tensor is the cost of the
method: these functions can compute it in blocks of queries so that only
`(B, block_size, S, F)` exists at any time.
"""

import math

from keras import ops

from keras_attention.ops.masking import masked_softmax

DIRECTIONS = ("forward", "backward", None)


def directional_mask(query_positions, key_positions=None, direction=None):
    """Which keys each query may attend to under a direction.

    ```
    forward:  key position < query position    (attends to the past)
    backward: key position > query position    (attends to the future)
    None:     key position != query position   (all but itself)
    ```

    Args:
        query_positions: int, or an int tensor of positions `(..., T)`. An
            int `T` (or a scalar tensor, such as the unknown length
            `keras.ops.shape(x)[1]`) stands for the positions `0..T-1`.
        key_positions: int or int tensor `(..., S)`. Defaults to
            `query_positions`.
        direction: `"forward"`, `"backward"` or `None`.

    Returns:
        A boolean tensor `(..., T, S)`; `(T, S)` for int arguments.

    Example:

    >>> mask = directional_mask(3, direction="forward")
    >>> keras.ops.convert_to_numpy(mask).astype(int).tolist()
    [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    """
    if direction not in DIRECTIONS:
        raise ValueError(
            f"Argument `direction` must be one of {DIRECTIONS}. "
            f"Received: direction={direction!r}"
        )
    key_positions = query_positions if key_positions is None else key_positions
    # expand_dims rather than `[..., None, :]`: LiteRT has no builtin for
    # a strided slice that adds an axis after an ellipsis.
    rows = ops.expand_dims(_as_positions(query_positions), -1)  # (..., T, 1)
    cols = ops.expand_dims(_as_positions(key_positions), -2)  # (..., 1, S)
    if direction == "forward":
        return ops.less(cols, rows)
    if direction == "backward":
        return ops.greater(cols, rows)
    return ops.not_equal(cols, rows)


def multi_dimensional_attention(
    query,
    key,
    value,
    mask=None,
    tanh_scale=5.0,
    block_size=None,
    return_attention_scores=False,
):
    """Token2token feature-wise attention with a scaled-tanh score.

    ```
    logits[b, t, s, f] = c * tanh((query[b, t, f] + key[b, s, f]) / c)
    weights = masked_softmax(logits, mask[b, t, s], axis=s)   # per feature
    output[b, t, f] = sum_s weights[b, t, s, f] * value[b, s, f]
    ```

    `query` is `W1 x_t` and `key` is `W2 x_s + b` of the DiSAN paper; `c`
    is `tanh_scale`. A query row whose keys are all masked gets zero
    weights and a zero output.

    With `block_size`, the queries are processed `block_size` at a time
    (sequentially, with `keras.ops.map`), so the `(B, T, S, F)` logits are
    never held at once; the result is the same.

    Args:
        query: float tensor `(B, T, F)`.
        key: float tensor `(B, S, F)`.
        value: float tensor `(B, S, F)`.
        mask: optional boolean tensor broadcastable to `(B, T, S)`,
            `True` = attend.
        tanh_scale: float. `c`, the bound of the scores. Defaults to `5.0`.
        block_size: optional int. Number of queries per block.
        return_attention_scores: bool. Also return the weights
            `(B, T, S, F)`; not available with `block_size`.

    Returns:
        `output` `(B, T, F)`, and the weights when asked for.

    Example:

    >>> q = keras.random.normal((2, 5, 4))
    >>> out = multi_dimensional_attention(q, q, q, block_size=2)
    >>> keras.ops.shape(out)
    (2, 5, 4)
    """
    if block_size is not None:
        if isinstance(block_size, bool) or not isinstance(block_size, int):
            raise ValueError(
                "Argument `block_size` must be a positive integer or None. "
                f"Received: block_size={block_size!r}"
            )
        if block_size <= 0:
            raise ValueError(
                "Argument `block_size` must be a positive integer or None. "
                f"Received: block_size={block_size!r}"
            )
        if return_attention_scores:
            raise ValueError(
                "The attention weights are not materialized in blocked mode. "
                f"Received: block_size={block_size}, "
                "return_attention_scores=True"
            )
    if mask is not None:
        shape = ops.shape(query)[:2] + ops.shape(key)[1:2]
        mask = ops.broadcast_to(ops.cast(mask, "bool"), shape)  # (B, T, S)
    if block_size is None:
        return _attend(
            query, key, value, mask, tanh_scale, return_attention_scores
        )
    return _blocked(query, key, value, mask, tanh_scale, block_size)


# Up to this `tanh_scale`, exp of a score cannot overflow float32, even
# summed over millions of keys, so the softmax needs no shift by its max.
MAX_UNSHIFTED_SCALE = 20.0


def _attend(query, key, value, mask, tanh_scale, return_weights=False):
    dtype = query.dtype
    scale = ops.cast(tanh_scale, dtype)
    # (B, T, 1, F) + (B, 1, S, F) -> (B, T, S, F)
    logits = ops.expand_dims(query, 2) + ops.expand_dims(key, 1)
    logits = scale * ops.tanh(logits / scale)
    if mask is not None:
        mask = ops.expand_dims(mask, -1)  # (B, T, S, 1)
    if return_weights or tanh_scale > MAX_UNSHIFTED_SCALE:
        weights = masked_softmax(logits, mask, axis=2)
        # (B, T, S, F) * (B, 1, S, F), summed over S -> (B, T, F)
        output = ops.sum(weights * ops.expand_dims(value, 1), axis=2)
        return (output, weights) if return_weights else output
    # The scores lie in [-c, c]: the softmax's numerator and denominator
    # are summed over S directly, and the (B, T, S, F) weights are never
    # divided out (the fast path; `test_fast_path_matches_the_softmax`).
    compute = "float32" if dtype in ("float16", "bfloat16") else dtype
    scores = ops.exp(ops.cast(logits, compute))  # (B, T, S, F)
    if mask is not None:
        scores = ops.where(mask, scores, ops.zeros((), compute))
    values = ops.expand_dims(ops.cast(value, compute), 1)  # (B, 1, S, F)
    numerator = ops.sum(scores * values, axis=2)  # (B, T, F)
    denominator = ops.sum(scores, axis=2)  # (B, T, F)
    # A query with every key masked: 0 / 1, a zero output.
    denominator = ops.where(denominator > 0, denominator, 1.0)
    return ops.cast(numerator / denominator, dtype)


def _blocked(query, key, value, mask, tanh_scale, block_size):
    length = ops.shape(query)[1]
    if isinstance(length, int):
        num_blocks = max(1, math.ceil(length / block_size))
    else:
        num_blocks = (length + block_size - 1) // block_size
    padding = num_blocks * block_size - length

    def to_blocks(x):
        # (B, T, ...) -> (B, T', ...) -> (num_blocks, B, block_size, ...)
        pad = [[0, 0], [0, padding]] + [[0, 0]] * (len(x.shape) - 2)
        x = ops.pad(x, pad, constant_values=False if x.dtype == "bool" else 0)
        shape = ops.shape(x)
        x = ops.reshape(x, (shape[0], num_blocks, block_size) + shape[2:])
        return ops.moveaxis(x, 1, 0)

    def one_block(blocks):
        q_block, mask_block = blocks
        return _attend(q_block, key, value, mask_block, tanh_scale)

    q_blocks = to_blocks(query)
    if mask is None:
        outputs = ops.map(
            lambda q_block: _attend(q_block, key, value, None, tanh_scale),
            q_blocks,
        )
    else:
        outputs = ops.map(one_block, (q_blocks, to_blocks(mask)))
    # (num_blocks, B, block_size, F) -> (B, T, F)
    outputs = ops.moveaxis(outputs, 0, 1)
    shape = ops.shape(outputs)
    outputs = ops.reshape(outputs, (shape[0], shape[1] * shape[2], shape[3]))
    return outputs[:, :length]


def _as_positions(positions):
    # A length: a Python int, a scalar tensor (`ops.shape(x)[1]` of an
    # unknown length on tensorflow) or a symbolic dimension (jax).
    if len(getattr(positions, "shape", ())) == 0:
        return ops.arange(positions, dtype="int32")
    return ops.cast(positions, "int32")
