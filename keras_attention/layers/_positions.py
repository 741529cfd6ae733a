"""Argument checks and broadcasting shared by the position layers.

`PositionEmbedding` and `SinusoidalPositionEncoding` take inputs
`(B, ..., T, F)` and return a tensor of the same shape. The position ids come
either from `start_index` (`start_index ... start_index + T - 1` for every
example) or from a `positions` tensor of shape `(T,)` (shared by the batch)
or `(B, T)` (one row per example).
"""

import numbers

import keras
import numpy as np
from keras import ops

from keras_attention.utils.validation import static_shape


def check_inputs(shape):
    """Inputs have rank 3 or more: `(B, ..., T, F)`."""
    if shape is not None and len(shape) < 3:
        raise ValueError(
            "Argument `inputs` must have rank 3 or more, shape "
            f"(B, ..., T, F). Received: inputs with shape {tuple(shape)} "
            f"(rank {len(shape)})"
        )


def check_positions(positions, start_index, inputs_shape, sequence_length=None):
    """Validates `positions` against the inputs; returns a tensor or `None`.

    Shapes are checked where they are static. When `sequence_length` is
    given, ids must lie in `[0, sequence_length)`; this is checked where the
    values can be read (see `known_values`).
    """
    if positions is None:
        return None
    if not _is_default_start(start_index):
        raise ValueError(
            "Pass either `positions` or `start_index`, not both: `positions` "
            "gives every position id. Received: "
            f"start_index={start_index!r} and positions={_describe(positions)}"
        )
    if _is_host_data(positions):
        positions = np.asarray(positions)
        dtype, shape = positions.dtype.name, positions.shape
    elif not hasattr(positions, "dtype") or not hasattr(positions, "shape"):
        raise ValueError(
            "Argument `positions` must be an integer tensor of shape (T,) "
            f"or (B, T). Received: positions={positions!r}"
        )
    else:
        dtype = keras.backend.standardize_dtype(positions.dtype)
        shape = static_shape(positions)
    if not keras.backend.is_int_dtype(dtype):
        raise ValueError(
            "Argument `positions` must hold integer position ids. "
            f"Received: positions with dtype {dtype}"
        )
    if len(shape) not in (1, 2):
        raise ValueError(
            "Argument `positions` must have shape (T,) or (B, T). "
            f"Received: positions with shape {tuple(shape)}"
        )
    batch, length = inputs_shape[0], inputs_shape[-2]
    wrong_length = None not in (shape[-1], length) and shape[-1] != length
    wrong_batch = (
        len(shape) == 2
        and None not in (shape[0], batch)
        and shape[0] not in (1, batch)
    )
    if wrong_length or wrong_batch:
        raise ValueError(
            "Argument `positions` must have shape (T,) or (B, T) with "
            f"T={length} and B={batch} (or 1), matching `inputs` of shape "
            f"{tuple(inputs_shape)}. Received: positions with shape "
            f"{tuple(shape)}"
        )
    values = None if sequence_length is None else known_values(positions)
    if values is not None and values.size:
        low, high = int(values.min()), int(values.max())
        if low < 0 or high >= sequence_length:
            raise ValueError(
                "Position ids outside the learned table: the layer holds "
                f"sequence_length={sequence_length} positions, ids 0 "
                f"to {sequence_length - 1}. Received: positions with values "
                f"from {low} to {high}"
            )
    return ops.convert_to_tensor(positions)


def check_start_index(start_index, length, sequence_length):
    """`start_index ... start_index + T - 1` lie in `[0, sequence_length)`.

    Checked where `T` is static and the value of `start_index` can be read.
    """
    values = known_values(start_index)
    if length is None or values is None or values.shape != ():
        return
    start = int(values)
    if start < 0 or start + length > sequence_length:
        raise ValueError(
            "Positions past the end of the learned table: the layer "
            f"holds sequence_length={sequence_length} positions. "
            f"Received: inputs with length {length} and "
            f"start_index={start}"
        )


def known_values(x):
    """The values of `x` as a NumPy array where they can be read, else `None`.

    They can be read for NumPy arrays, Python numbers and sequences, and
    eager tensors. Inside a traced function (`tf.function`, `jax.jit`, a
    symbolic model) they cannot, and checks on them are skipped.
    """
    if _is_host_data(x):
        return np.asarray(x)
    try:
        return np.asarray(ops.convert_to_numpy(x))
    except Exception:  # A symbolic or traced tensor: values unknown yet.
        return None


def broadcast_to_inputs(values, positions_rank, inputs_shape):
    """Broadcasts per-position vectors to the inputs' shape `(B, ..., T, F)`.

    `values` is `(T, F)` for positions `(T,)` (or from `start_index`), and
    `(B, T, F)` for positions `(B, T)`, which line up with the batch axis.
    """
    if positions_rank == 2:
        # (B, T, F) -> (B, 1, ..., 1, T, F)
        for _ in range(len(inputs_shape) - 3):
            values = ops.expand_dims(values, 1)
    return ops.broadcast_to(values, inputs_shape)


def _is_host_data(x):
    return isinstance(x, (list, tuple, numbers.Number, np.ndarray))


def _is_default_start(start_index):
    return (
        isinstance(start_index, numbers.Integral)
        and not isinstance(start_index, bool)
        and start_index == 0
    )


def _describe(positions):
    shape = getattr(positions, "shape", None)
    if shape is None:
        return repr(positions)
    return f"<tensor of shape {tuple(static_shape(positions))}>"
