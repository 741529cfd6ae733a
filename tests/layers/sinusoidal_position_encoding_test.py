import keras
import keras_hub
import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase


def numpy_sinusoidal_position_encoding(length, width, start=0):
    """The paper's formula, in float64: PE(pos, 2i) = sin(pos / 10000^(2i/d)),
    PE(pos, 2i + 1) = cos(pos / 10000^(2i/d))."""
    encoding = np.zeros((length, width))
    for pos in range(start, start + length):
        for i in range(0, width, 2):
            angle = pos / 10000 ** (i / width)
            encoding[pos - start, i] = np.sin(angle)
            if i + 1 < width:
                encoding[pos - start, i + 1] = np.cos(angle)
    return encoding


class SinusoidalPositionEncodingTest(LayerTestCase):
    def test_layer_contract(self):
        self.run_layer_test(
            layers.SinusoidalPositionEncoding,
            init_kwargs={"max_wavelength": 500.0},
            input_data=np.random.normal(size=(2, 7, 6)).astype("float32"),
            expected_output_shape=(2, 7, 6),
            run_training_check=False,  # no weights
        )


@pytest.mark.parametrize("width", [16, 17])
@pytest.mark.parametrize("start_index", [0, 9])
def test_matches_numpy_reference(width, start_index):
    x = np.zeros((1, 30, width), "float32")
    encoding = layers.SinusoidalPositionEncoding()(x, start_index=start_index)
    expected = numpy_sinusoidal_position_encoding(30, width, start_index)
    np.testing.assert_allclose(
        ops.convert_to_numpy(encoding)[0], expected, atol=2e-5
    )


@pytest.mark.parametrize("start_index", [0, 5])
def test_equals_keras_hub_sine_position_encoding(start_index):
    x = np.random.normal(size=(3, 40, 32)).astype("float32")
    ours = layers.SinusoidalPositionEncoding()(x, start_index=start_index)
    theirs = keras_hub.layers.SinePositionEncoding()(x, start_index=start_index)
    np.testing.assert_allclose(
        ops.convert_to_numpy(ours), ops.convert_to_numpy(theirs), atol=1e-5
    )


def test_any_length_and_cached_slices_agree():
    layer = layers.SinusoidalPositionEncoding()
    full = ops.convert_to_numpy(layer(np.zeros((1, 3000, 8), "float32")))
    step = layer(np.zeros((1, 1, 8), "float32"), start_index=2999)
    np.testing.assert_allclose(ops.convert_to_numpy(step)[0, 0], full[0, -1])


def test_stays_accurate_in_half_precision():
    x = np.zeros((1, 2000, 8), "float32")
    exact = numpy_sinusoidal_position_encoding(2000, 8)
    for policy in ("mixed_float16", "mixed_bfloat16"):
        layer = layers.SinusoidalPositionEncoding(dtype=policy)
        values = ops.convert_to_numpy(ops.cast(layer(x), "float32"))[0]
        # Only the final rounding to 16 bits is lost, not the angle.
        np.testing.assert_allclose(values, exact, atol=1e-2)


def test_offset_is_a_linear_function_of_position():
    # PE(pos + k) = R_k PE(pos) with a block rotation R_k (section 3.5).
    width, k = 8, 5
    encoding = numpy_sinusoidal_position_encoding(60, width)
    ours = ops.convert_to_numpy(
        layers.SinusoidalPositionEncoding()(np.zeros((1, 60, width)))
    )[0]
    for i in range(0, width, 2):
        w = 1 / 10000 ** (i / width)
        # [sin(a + b), cos(a + b)] = [sin a, cos a] @ [[cos b, -sin b],
        #                                             [sin b, cos b]]
        rotation = np.array(
            [[np.cos(k * w), -np.sin(k * w)], [np.sin(k * w), np.cos(k * w)]]
        )
        shifted = ours[:-k, i : i + 2] @ rotation
        np.testing.assert_allclose(shifted, encoding[k:, i : i + 2], atol=1e-4)


@pytest.mark.parametrize("value", [0, 1, -3, "long"])
def test_bad_max_wavelength(value):
    with pytest.raises(ValueError, match=f"Received: max_wavelength={value!r}"):
        layers.SinusoidalPositionEncoding(max_wavelength=value)


def test_wrong_rank_names_the_argument():
    with pytest.raises(ValueError, match=r"`inputs` must have rank 3"):
        layers.SinusoidalPositionEncoding()(keras.ops.zeros((4, 8)))
