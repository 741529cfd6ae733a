import keras
from keras import ops

from keras_attention.layers._positions import broadcast_to_inputs
from keras_attention.layers._positions import check_inputs
from keras_attention.layers._positions import check_positions
from keras_attention.ops import sinusoidal_encoding
from keras_attention.ops import sinusoidal_positions
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class SinusoidalPositionEncoding(keras.layers.Layer):
    """Fixed sinusoidal position encodings for a sequence of vectors.

    Returns, for inputs of shape `(B, ..., T, F)`, the encodings of
    positions `ids = start_index + arange(T)` (or the given `positions`),
    broadcast to the input shape:

    ```
    inverse_timescale[j] = max_wavelength ** (-2 * (j // 2) / F)
    encoding[t, j] = sin(ids[t] * inverse_timescale[j])  # j even
    encoding[t, j] = cos(ids[t] * inverse_timescale[j])  # j odd
    ```

    This is the paper's `PE(pos, 2i) = sin(pos / 10000^(2i/F))`,
    `PE(pos, 2i+1) = cos(pos / 10000^(2i/F))`. The position axis is the
    second-to-last. The layer has no weights and works for any length. Add
    its output to the token embeddings.

    Masking: the encodings do not depend on the mask; the input's Keras mask
    is passed on unchanged.

    Relation to keras-hub: `keras_hub.layers.SinePositionEncoding` takes the
    same argument (`max_wavelength`) and call arguments, interleaves sine
    and cosine the same way and gives the same values in float32.
    Differences:

    - the angles are computed in float32 here under every dtype policy;
      keras-hub computes them in the compute dtype, so under
      `mixed_bfloat16` its values are off by up to about 1 past position
      300, and under `mixed_float16` by about 0.1 at position 2000;
    - `positions` must be integers;
    - `positions` of shape `(B, T)` line up with the batch axis for inputs
      of rank 4 or more (keras-hub broadcasts them against the second axis);
    - `positions` with a `start_index` other than `0` is an error here
      (keras-hub ignores `start_index`).

    Args:
        max_wavelength: float. The longest wavelength divided by `2 * pi`.
            Defaults to `10000.0`, as in the paper.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor of shape `(B, ..., T, F)`, rank 3 or more; only its
            shape is used.
        start_index: int or scalar int tensor. Position of the first input
            token, for decoding with a cache. Defaults to `0`.
        positions: int tensor of position ids, shape `(T,)` for the whole
            batch or `(B, T)` per example, for packed or left-padded
            sequences. Replaces `start_index`, which must then stay `0`.
            Defaults to `None`.

    Returns:
        A tensor of the input's shape, in the layer's compute dtype.

    Example:

    >>> x = keras.ops.zeros((2, 6, 16))
    >>> layer = SinusoidalPositionEncoding()
    >>> keras.ops.shape(layer(x))
    (2, 6, 16)
    >>> positions = np.array([[0, 1, 2, 0, 1, 2], [4, 5, 6, 7, 8, 9]])
    >>> keras.ops.shape(layer(x, positions=positions))
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

    def call(self, inputs, start_index=0, positions=None):
        shape = static_shape(inputs)
        check_inputs(shape)
        positions = check_positions(positions, start_index, shape)
        dynamic_shape = ops.shape(inputs)
        if positions is not None:
            # (T,) -> (T, F), or (B, T) -> (B, T, F); then (B, ..., T, F).
            encoding = sinusoidal_encoding(
                positions,
                shape[-1],
                max_wavelength=self.max_wavelength,
                dtype=self.compute_dtype,
            )
            return broadcast_to_inputs(
                encoding, len(positions.shape), dynamic_shape
            )
        # (T, F) encodings, broadcast to (B, ..., T, F).
        encoding = sinusoidal_positions(
            dynamic_shape[-2],
            shape[-1],
            start_index=start_index,
            max_wavelength=self.max_wavelength,
            dtype=self.compute_dtype,
        )
        return ops.broadcast_to(encoding, dynamic_shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"max_wavelength": self.max_wavelength})
        return config
