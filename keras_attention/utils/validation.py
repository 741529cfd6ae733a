"""Argument checks shared by layers. Each error names the argument and value.

Shape checks run on static shapes only: a dimension that is `None` (unknown
until run time) is not checked.
"""

import numbers


def check_positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        expected = "a positive integer" + (" or None" if allow_none else "")
        raise ValueError(
            f"The argument `{name}` must be {expected}. "
            f"Received: {name}={value!r}"
        )


def check_non_negative_int(name, value):
    """Python or NumPy integers >= 0 (not bools)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < 0
    ):
        raise ValueError(
            f"Argument `{name}` must be a non-negative int. "
            f"Received: {name}={value!r}"
        )


def check_rate(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(
            f"Argument `{name}` must be a float in [0, 1). "
            f"Received: {name}={value!r}"
        )
    if not 0.0 <= value < 1.0:
        raise ValueError(
            f"Argument `{name}` must be a float in [0, 1). "
            f"Received: {name}={value!r}"
        )


def check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(
            f"Argument `{name}` must be one of {tuple(choices)}. "
            f"Received: {name}={value!r}"
        )


def check_rank(name, shape, rank):
    if shape is None:
        return
    if len(shape) != rank:
        raise ValueError(
            f"Argument `{name}` must have rank {rank}. Received: "
            f"{name} with shape {tuple(shape)} (rank {len(shape)})"
        )


def check_dims(name, shape, expected, what):
    """Checks `shape` against `expected` where both are known.

    `expected` is a tuple with `None` for dimensions that may be anything.
    `what` describes the expected shape in words for the message.
    """
    if shape is None:
        return
    shape = tuple(shape)
    mismatch = len(shape) != len(expected) or any(
        e is not None and s is not None and s != e
        for s, e in zip(shape, expected)
    )
    if mismatch:
        raise ValueError(
            f"Argument `{name}` must have shape {what}. "
            f"Received: {name} with shape {shape}"
        )


def check_mask(name, mask, batch, length, inputs_name="inputs"):
    """Checks a per-token mask `(B, T)` against its inputs' batch and length.

    `batch` and `length` come from the inputs' static shape (`None` when
    unknown). A mask batch of 1 broadcasts and is accepted.
    """
    shape = static_shape(mask)
    if shape is None:
        return
    mismatch = len(shape) != 2 or any(
        e is not None and s is not None and s != e and (i, s) != (0, 1)
        for i, (s, e) in enumerate(zip(shape, (batch, length)))
    )
    if mismatch:
        raise ValueError(
            f"Argument `{name}` must have shape (batch, length) = "
            f"({batch}, {length}), matching `{inputs_name}`. "
            f"Received: {name} with shape {shape}"
        )


def static_shape(x):
    """The static shape of a tensor as a tuple, or `None` if not a tensor.

    Dimensions unknown until run time (`None`, or jax's symbolic dimensions
    during export) become `None`.
    """
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    return tuple(_static_dim(d) for d in shape)


def _static_dim(dim):
    if isinstance(dim, int):
        return dim
    try:
        return int(dim)
    except (TypeError, ValueError, Exception):
        return None
