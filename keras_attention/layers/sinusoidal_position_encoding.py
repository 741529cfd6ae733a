import keras
from keras import ops

from keras_attention.ops import sinusoidal_positions
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class SinusoidalPositionEncoding(keras.layers.Layer):
    """Fixed sinusoidal position encodings for a sequence of vectors.

    Returns, for inputs of shape `(B, T, F)`, the encodings of positions
    `start_index ... start_index + T - 1`, broadcast to the input shape:

    ```
    inverse_timescale[j] = max_wavelength ** (-2 * (j // 2) / F)
    encoding[t, j] = sin((t + start_index) * inverse_timescale[j])  # j even
    encoding[t, j] = cos((t + start_index) * inverse_timescale[j])  # j odd
    ```

    The layer has no weights and works for any length. Add its output to the
    token embeddings. The values equal those of
    `keras_hub.layers.SinePositionEncoding`.

    Masking: the encodings do not depend on the mask; the input's Keras mask
    is passed on unchanged.

    Args:
        max_wavelength: float. The longest wavelength divided by `2 * pi`.
            Defaults to `10000.0`, as in the paper.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor of shape `(B, T, F)`; only its shape is used.
        start_index: int or scalar int tensor. Position of the first input
            token, for decoding with a cache. Defaults to `0`.

    Returns:
        A tensor of the input's shape, in the layer's compute dtype.

    Example:

    >>> x = keras.ops.zeros((2, 6, 16))
    >>> encoding = SinusoidalPositionEncoding()(x)
    >>> keras.ops.shape(encoding)
    (2, 6, 16)

    In a model:

    ```python
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(1000, 64)(tokens)
    x = x + SinusoidalPositionEncoding()(x)
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          section 3.5.
    """

    def __init__(self, max_wavelength=10000.0, **kwargs):
        if not isinstance(max_wavelength, (int, float)) or max_wavelength <= 1:
            raise ValueError(
                "Argument `max_wavelength` must be a number greater than 1. "
                f"Received: max_wavelength={max_wavelength!r}"
            )
        super().__init__(**kwargs)
        self.max_wavelength = max_wavelength
        self.supports_masking = True
        self.built = True

    def call(self, inputs, start_index=0):
        check_rank("inputs", static_shape(inputs), 3)
        shape = ops.shape(inputs)
        # (T, F) encodings, broadcast to (B, T, F).
        encoding = sinusoidal_positions(
            shape[1],
            inputs.shape[-1],
            start_index=start_index,
            max_wavelength=self.max_wavelength,
            dtype=self.compute_dtype,
        )
        return ops.broadcast_to(encoding, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"max_wavelength": self.max_wavelength})
        return config
