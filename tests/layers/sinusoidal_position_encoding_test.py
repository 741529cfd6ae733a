import keras
import keras_hub
import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

# Per-example position ids of a packed batch: two sequences in the first row.
POSITIONS = np.array([[0, 1, 2, 3, 0, 1, 2], [5, 6, 7, 8, 9, 10, 11]], "int32")


def numpy_sinusoidal_encoding(positions, width):
    """The paper's formula, in float64: PE(pos, 2i) = sin(pos / 10000^(2i/d)),
    PE(pos, 2i + 1) = cos(pos / 10000^(2i/d)). Shape positions.shape + (d,)."""
    positions = np.asarray(positions, "float64")
    encoding = np.zeros(positions.shape + (width,))
    for i in range(0, width, 2):
        angle = positions / 10000 ** (i / width)
        encoding[..., i] = np.sin(angle)
        if i + 1 < width:
            encoding[..., i + 1] = np.cos(angle)
    return encoding


def numpy_sinusoidal_position_encoding(length, width, start=0):
    return numpy_sinusoidal_encoding(np.arange(start, start + length), width)


class SinusoidalPositionEncodingTest(LayerTestCase):
    def test_layer_contract(self):
        self.run_layer_test(
            layers.SinusoidalPositionEncoding,
            init_kwargs={"max_wavelength": 500.0},
            input_data=np.random.normal(size=(2, 7, 6)).astype("float32"),
            expected_output_shape=(2, 7, 6),
            run_training_check=False,  # no weights
        )

    def test_layer_contract_with_positions(self):
        self.run_layer_test(
            layers.SinusoidalPositionEncoding,
            init_kwargs={},
            input_data={
                "inputs": np.random.normal(size=(2, 7, 6)).astype("float32"),
                "positions": POSITIONS,
            },
            expected_output_shape=(2, 7, 6),
            run_training_check=False,  # no weights
        )

    def test_layer_contract_rank_4(self):
        self.run_layer_test(
            layers.SinusoidalPositionEncoding,
            init_kwargs={},
            input_data={
                "inputs": np.random.normal(size=(2, 3, 7, 6)).astype("float32"),
                "positions": POSITIONS,
            },
            expected_output_shape=(2, 3, 7, 6),
            run_training_check=False,  # no weights
            # Padding appends along axis 1, which is not the position axis
            # of rank-4 inputs; pad only `inputs` there.
            padding_inputs=["inputs"],
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


@pytest.mark.parametrize("shape", [(3, 40, 32), (3, 2, 40, 32)])
@pytest.mark.parametrize("start_index", [0, 5])
def test_equals_keras_hub_sine_position_encoding(shape, start_index):
    x = np.random.normal(size=shape).astype("float32")
    ours = layers.SinusoidalPositionEncoding()(x, start_index=start_index)
    theirs = keras_hub.layers.SinePositionEncoding()(x, start_index=start_index)
    np.testing.assert_allclose(
        ops.convert_to_numpy(ours), ops.convert_to_numpy(theirs), atol=1e-5
    )


@pytest.mark.parametrize("shape", [(2, 7, 16), (2, 3, 7, 16)])
@pytest.mark.parametrize("positions", [POSITIONS[1], POSITIONS[1:]])
def test_equals_keras_hub_with_shared_positions(shape, positions):
    # Positions (T,) or (1, T): the same ids for every example.
    x = np.random.normal(size=shape).astype("float32")
    ours = layers.SinusoidalPositionEncoding()(x, positions=positions)
    theirs = keras_hub.layers.SinePositionEncoding()(x, positions=positions)
    np.testing.assert_allclose(
        ops.convert_to_numpy(ours), ops.convert_to_numpy(theirs), atol=1e-5
    )


def test_equals_keras_hub_with_per_example_positions():
    x = np.random.normal(size=(2, 7, 16)).astype("float32")
    ours = layers.SinusoidalPositionEncoding()(x, positions=POSITIONS)
    theirs = keras_hub.layers.SinePositionEncoding()(x, positions=POSITIONS)
    np.testing.assert_allclose(
        ops.convert_to_numpy(ours), ops.convert_to_numpy(theirs), atol=1e-5
    )


def test_rank_4_per_example_positions_follow_the_batch_axis():
    # With inputs (B, X, T, F) and positions (B, T), every slice x[:, j]
    # gets the encodings keras-hub gives the rank-3 slice. (keras-hub itself
    # broadcasts (B, T, F) against (B, X, T, F) from the right, which lines
    # the batch of `positions` up with X.)
    x = np.random.normal(size=(2, 3, 7, 16)).astype("float32")
    ours = ops.convert_to_numpy(
        layers.SinusoidalPositionEncoding()(x, positions=POSITIONS)
    )
    hub = keras_hub.layers.SinePositionEncoding()
    for j in range(3):
        theirs = ops.convert_to_numpy(hub(x[:, j], positions=POSITIONS))
        np.testing.assert_allclose(ours[:, j], theirs, atol=1e-5)


@pytest.mark.parametrize("width", [16, 17])
def test_positions_match_numpy_reference(width):
    x = np.zeros((2, 3, 7, width), "float32")
    encoding = layers.SinusoidalPositionEncoding()(x, positions=POSITIONS)
    expected = numpy_sinusoidal_encoding(POSITIONS, width)  # (B, T, F)
    np.testing.assert_allclose(
        ops.convert_to_numpy(encoding),
        np.broadcast_to(expected[:, None], x.shape),
        atol=2e-5,
    )


@pytest.mark.parametrize("shape", [(2, 7, 8), (2, 3, 7, 8)])
def test_positions_from_start_index_equal_start_index(shape):
    layer = layers.SinusoidalPositionEncoding()
    x = np.zeros(shape, "float32")
    by_start = ops.convert_to_numpy(layer(x, start_index=9))
    for positions in (9 + np.arange(7), np.tile(9 + np.arange(7), (2, 1))):
        by_ids = layer(x, positions=ops.convert_to_tensor(positions))
        np.testing.assert_allclose(
            ops.convert_to_numpy(by_ids), by_start, atol=1e-6
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
    with pytest.raises(ValueError, match=r"`inputs` must have rank 3 or more"):
        layers.SinusoidalPositionEncoding()(keras.ops.zeros((4, 8)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"positions": np.array([0.0, 1.0, 2.0])},
            r"`positions` must hold integer.*dtype float",
        ),
        (
            {"positions": np.zeros((2, 1, 3), "int32")},
            r"`positions` must have shape \(T,\) or \(B, T\)\. "
            r"Received: positions with shape \(2, 1, 3\)",
        ),
        (
            {"positions": np.arange(4)},
            r"T=3 and B=2.*Received: positions with shape \(4,\)",
        ),
        (
            {"positions": np.arange(3), "start_index": 2},
            r"either `positions` or `start_index`.*start_index=2",
        ),
    ],
)
def test_bad_positions_name_the_argument(kwargs, message):
    layer = layers.SinusoidalPositionEncoding()
    with pytest.raises(ValueError, match=message):
        layer(np.zeros((2, 3, 4)), **kwargs)
