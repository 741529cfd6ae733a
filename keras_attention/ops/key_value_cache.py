"""Key/value caches for incremental decoding, in one layout.

A cache is a pair `(keys, values)` of one attention layer, heads first:
`keys` `(B, N, L, H)` and `values` `(B, N, L, Hv)`, where `L` is the number
of positions it holds. A model's cache is a tuple of one pair per layer.
A decoding step writes the new tokens' projected keys and values into each
pair (`update_cache`), and one query attends through batched matrix
products on the pair as it is (`single_query_attention(...,
heads_first=True)`); a beam search gathers the rows of every pair
(`reorder_cache`). Nothing stacks the layers or slices them apart, which
would copy the whole cache at every step.

keras-hub keeps one stacked tensor per layer, `(B, 2, L, N, H)` (keys at
`[:, 0]`, values at `[:, 1]`), and `(B, num_layers, 2, L, N, H)` per
model. `from_stacked_cache` and `to_stacked_cache` convert at that
boundary; `MultiHeadAttention(cache=...)` and the models' `decode_step`
accept the stacked form through them.
"""

from keras import ops

from keras_attention.ops.writes import slice_update


def empty_cache(
    batch_size, num_heads, length, key_dim, value_dim=None, dtype=None
):
    """A cache of zeros: `(keys (B, N, L, H), values (B, N, L, Hv))`.

    Args:
        batch_size: int. Number of sequences `B`.
        num_heads: int. Attention heads `N`.
        length: int. Positions the cache holds, `L`.
        key_dim: int. Width of each key head, `H`.
        value_dim: int. Width of each value head. Defaults to `key_dim`.
        dtype: the dtype of the cache. Defaults to `"float32"`.

    Returns:
        A `(keys, values)` pair.

    Example:

    >>> from keras import ops
    >>> keys, values = empty_cache(2, 4, 10, 8)
    >>> ops.shape(keys)
    (2, 4, 10, 8)
    """
    value_dim = key_dim if value_dim is None else value_dim
    dtype = dtype or "float32"
    return (
        ops.zeros((batch_size, num_heads, length, key_dim), dtype=dtype),
        ops.zeros((batch_size, num_heads, length, value_dim), dtype=dtype),
    )


def update_cache(cache, keys, values, index):
    """Writes the new tokens' projected keys and values into a cache.

    Args:
        cache: a `(keys, values)` pair, `(B, N, L, H)` and `(B, N, L, Hv)`.
        keys: tensor `(B, T, N, H)`, the projected keys of `T` new tokens,
            as the attention's key projection returns them.
        values: tensor `(B, T, N, Hv)`.
        index: int or scalar int tensor, the position of the first new
            token; positions `index` to `index + T - 1` are written.

    Returns:
        The updated `(keys, values)` pair, in the cache's dtype.
    """
    key_cache, value_cache = cache
    start = [0, 0, index, 0]
    return (
        slice_update(key_cache, start, _heads_first(keys, key_cache.dtype)),
        slice_update(
            value_cache, start, _heads_first(values, value_cache.dtype)
        ),
    )


def reorder_cache(cache, order):
    """Gathers the rows `order` `(B',)` of every tensor of a cache.

    Works on one pair, a tuple of pairs, or any nested structure of
    tensors with the batch axis first (a beam search follows its surviving
    hypotheses so).
    """
    if isinstance(cache, (tuple, list)):
        return tuple(reorder_cache(part, order) for part in cache)
    return ops.take(cache, order, axis=0)


def from_stacked_cache(cache):
    """keras-hub's stacked layout -> heads-first pairs.

    Args:
        cache: `(B, 2, L, N, H)` (one layer) or `(B, num_layers, 2, L, N,
            H)` (a model).

    Returns:
        A `(keys, values)` pair of `(B, N, L, H)`, or a tuple of one pair
        per layer.
    """
    if len(cache.shape) == 6:
        return tuple(
            from_stacked_cache(cache[:, i]) for i in range(cache.shape[1])
        )
    return (ops.swapaxes(cache[:, 0], 1, 2), ops.swapaxes(cache[:, 1], 1, 2))


def to_stacked_cache(cache):
    """Heads-first pairs -> keras-hub's stacked layout; the inverse of
    `from_stacked_cache`.

    Args:
        cache: a `(keys, values)` pair of `(B, N, L, H)`, or a tuple of one
            pair per layer.

    Returns:
        `(B, 2, L, N, H)` for a pair, `(B, num_layers, 2, L, N, H)` for a
        tuple of pairs.
    """
    if isinstance(cache[0], (tuple, list)):
        return ops.stack([to_stacked_cache(pair) for pair in cache], axis=1)
    return ops.stack([ops.swapaxes(part, 1, 2) for part in cache], axis=1)


def is_stacked_cache(cache):
    """Whether `cache` is one stacked tensor (keras-hub's layout) rather
    than heads-first pairs."""
    return cache is not None and not isinstance(cache, (tuple, list))


def cache_batch_and_length(cache):
    """The static `(B, L)` of a cache in either layout, `None` where
    unknown."""
    if is_stacked_cache(cache):
        shape = tuple(cache.shape)
        return shape[0], shape[2]
    while isinstance(cache[0], (tuple, list)):
        cache = cache[0]
    shape = tuple(cache[0].shape)
    return shape[0], shape[2]


def _heads_first(heads, dtype):
    """Projected heads `(B, T, N, H)` -> `(B, N, T, H)` in `dtype`."""
    if heads.shape[1] == 1:
        # One token: the same memory, no transpose.
        _, _, count, width = heads.shape
        return ops.cast(ops.reshape(heads, (-1, count, 1, width)), dtype)
    return ops.cast(ops.swapaxes(heads, 1, 2), dtype)
