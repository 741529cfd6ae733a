"""Position encodings as pure functions."""

from keras import ops


def sinusoidal_positions(
    length, width, start_index=0, max_wavelength=10000.0, dtype="float32"
):
    """The Transformer's sinusoidal position encoding, shape `(T, F)`.

    ```
    inverse_timescale[j] = max_wavelength ** (-2 * (j // 2) / width)
    angle[t, j] = (t + start_index) * inverse_timescale[j]
    encoding[t, j] = sin(angle[t, j]) if j is even else cos(angle[t, j])
    ```

    The angles are computed in float32 and the result cast to `dtype`, so
    positions stay exact under float16 and bfloat16. Wavelengths run from
    `2 * pi` to `max_wavelength * 2 * pi`.

    Args:
        length: int or scalar tensor. `T`, the number of positions.
        width: int. `F`, the encoding width.
        start_index: int or scalar tensor. The first position.
        max_wavelength: float. Defaults to `10000.0`, as in the paper.
        dtype: the output dtype.

    Returns:
        A tensor of shape `(T, F)`.
    """
    # 0..T-1 as a running count, not `arange(T)`: jax2onnx (ONNX export on
    # jax) rejects the `stop=None` of `arange(T)` and an unknown `stop`.
    positions = ops.cumsum(ops.ones((length,), "int32")) - 1
    positions = ops.cast(positions, "float32") + ops.cast(
        start_index, "float32"
    )
    return sinusoidal_encoding(
        positions, width, max_wavelength=max_wavelength, dtype=dtype
    )


def sinusoidal_encoding(
    positions, width, max_wavelength=10000.0, dtype="float32"
):
    """Sinusoidal encodings of given position ids, one `F`-vector each.

    ```
    inverse_timescale[j] = max_wavelength ** (-2 * (j // 2) / width)
    angle[..., j] = positions[...] * inverse_timescale[j]
    encoding[..., j] = sin(angle[..., j]) if j is even else cos(angle[..., j])
    ```

    `sinusoidal_positions(T, F, start_index)` is this function applied to
    `start_index + arange(T)`. The angles are computed in float32 and the
    result cast to `dtype`.

    Args:
        positions: tensor of position ids, any shape, for example `(T,)` or
            `(B, T)`. Integer or float.
        width: int. `F`, the encoding width.
        max_wavelength: float. Defaults to `10000.0`, as in the paper.
        dtype: the output dtype.

    Returns:
        A tensor of shape `positions.shape + (F,)`.

    Example:

    >>> positions = keras.ops.convert_to_tensor([[0, 1, 2], [7, 8, 9]])
    >>> keras.ops.shape(sinusoidal_encoding(positions, 16))
    (2, 3, 16)
    """
    positions = ops.cast(positions, "float32")
    # `arange(0, F)`: jax2onnx rejects the `stop=None` of `arange(F)`.
    channels = ops.arange(0, width, dtype="int32")
    exponents = ops.cast(2 * (channels // 2), "float32") / float(width)
    inverse_timescales = ops.power(float(max_wavelength), -exponents)
    # (..., 1) * (F,) -> (..., F)
    angles = ops.expand_dims(positions, -1) * inverse_timescales
    is_even = ops.equal(channels % 2, 0)
    encoding = ops.where(is_even, ops.sin(angles), ops.cos(angles))
    return ops.cast(encoding, dtype)
