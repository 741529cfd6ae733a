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
    positions = ops.arange(length, dtype="float32") + ops.cast(
        start_index, "float32"
    )
    channels = ops.arange(width, dtype="int32")
    exponents = ops.cast(2 * (channels // 2), "float32") / float(width)
    inverse_timescales = ops.power(float(max_wavelength), -exponents)
    # (T, 1) * (1, F) -> (T, F)
    angles = ops.expand_dims(positions, 1) * ops.expand_dims(
        inverse_timescales, 0
    )
    is_even = ops.equal(channels % 2, 0)
    encoding = ops.where(is_even, ops.sin(angles), ops.cos(angles))
    return ops.cast(encoding, dtype)
