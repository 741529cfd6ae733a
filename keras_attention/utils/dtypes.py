"""Input dtypes of the float layers."""

import keras


def dtype_name(dtype):
    """The standard name of `dtype` (`"float16"`, `"bfloat16"`, ...).

    Accepts strings, NumPy dtypes and the backends' dtypes
    (`torch.float16`, `tf.float16`, jax's).
    """
    return keras.backend.standardize_dtype(dtype)


def floating_inputs(dtype, *tensors):
    """Casts integer and boolean tensors to `dtype`; others pass unchanged.

    The attention layers read their inputs as numbers, as `keras.layers.
    Dense` does: integer inputs would otherwise reach a matmul against
    float weights, which torch refuses ("expected scalar type Float but
    found Int") and tensorflow refuses in elementwise ops. Float tensors
    are returned as they are (the same objects, so Keras masks attached to
    them stay attached); `None` stays `None`.

    Returns:
        The tensors, one if one was given, else a tuple.
    """
    cast = tuple(
        t
        if t is None
        or "float" in keras.backend.standardize_dtype(getattr(t, "dtype"))
        else keras.ops.cast(t, dtype)
        for t in tensors
    )
    return cast[0] if len(cast) == 1 else cast
