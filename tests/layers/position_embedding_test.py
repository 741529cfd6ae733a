import keras
import keras_hub
import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

# Per-example position ids of a packed batch: two sequences in the first row.
POSITIONS = np.array([[0, 1, 2, 3, 0, 1, 2], [5, 6, 7, 8, 9, 10, 11]], "int32")


class PositionEmbeddingTest(LayerTestCase):
    def test_layer_contract(self):
        self.run_layer_test(
            layers.PositionEmbedding,
            init_kwargs={"sequence_length": 16},
            input_data=np.random.normal(size=(2, 7, 6)).astype("float32"),
            expected_output_shape=(2, 7, 6),
        )

    def test_layer_contract_with_positions(self):
        self.run_layer_test(
            layers.PositionEmbedding,
            init_kwargs={"sequence_length": 16},
            input_data={
                "inputs": np.random.normal(size=(2, 7, 6)).astype("float32"),
                "positions": POSITIONS,
            },
            expected_output_shape=(2, 7, 6),
        )

    def test_layer_contract_rank_4(self):
        self.run_layer_test(
            layers.PositionEmbedding,
            init_kwargs={"sequence_length": 16},
            input_data={
                "inputs": np.random.normal(size=(2, 3, 7, 6)).astype("float32"),
                "positions": POSITIONS,
            },
            expected_output_shape=(2, 3, 7, 6),
            # Padding appends along axis 1, which is not the position axis
            # of rank-4 inputs; pad only `inputs` there.
            padding_inputs=["inputs"],
        )


def same_table_layers(sequence_length, width):
    """Our layer and keras-hub's, holding the same random table."""
    ours = layers.PositionEmbedding(sequence_length=sequence_length)
    theirs = keras_hub.layers.PositionEmbedding(sequence_length=sequence_length)
    ours.build((None, None, width))
    theirs.build((None, None, width))
    theirs.set_weights(ours.get_weights())
    return ours, theirs


def numpy_of(x):
    return ops.convert_to_numpy(x)


@pytest.mark.parametrize("shape", [(2, 7, 6), (2, 3, 7, 6), (2, 1, 3, 7, 6)])
@pytest.mark.parametrize("start_index", [0, 5])
def test_equals_keras_hub_with_start_index(shape, start_index):
    ours, theirs = same_table_layers(12, 6)
    x = np.random.normal(size=shape).astype("float32")
    np.testing.assert_array_equal(
        numpy_of(ours(x, start_index=start_index)),
        numpy_of(theirs(x, start_index=start_index)),
    )


@pytest.mark.parametrize("shape", [(2, 7, 6), (2, 3, 7, 6)])
@pytest.mark.parametrize("positions", [POSITIONS[1], POSITIONS[1:]])
def test_equals_keras_hub_with_shared_positions(shape, positions):
    # Positions (T,) or (1, T): the same ids for every example.
    ours, theirs = same_table_layers(12, 6)
    x = np.random.normal(size=shape).astype("float32")
    np.testing.assert_array_equal(
        numpy_of(ours(x, positions=positions)),
        numpy_of(theirs(x, positions=positions)),
    )


def test_equals_keras_hub_with_per_example_positions():
    ours, theirs = same_table_layers(12, 6)
    x = np.random.normal(size=(2, 7, 6)).astype("float32")
    np.testing.assert_array_equal(
        numpy_of(ours(x, positions=POSITIONS)),
        numpy_of(theirs(x, positions=POSITIONS)),
    )


def test_rank_4_per_example_positions_follow_the_batch_axis():
    # With inputs (B, X, T, F) and positions (B, T), every slice x[:, j]
    # gets the rows keras-hub gives the rank-3 slice. (keras-hub itself
    # broadcasts (B, T, F) against (B, X, T, F) from the right, which lines
    # the batch of `positions` up with X.)
    ours, theirs = same_table_layers(12, 6)
    x = np.random.normal(size=(2, 3, 7, 6)).astype("float32")
    output = numpy_of(ours(x, positions=POSITIONS))
    for j in range(3):
        np.testing.assert_array_equal(
            output[:, j], numpy_of(theirs(x[:, j], positions=POSITIONS))
        )


@pytest.mark.parametrize("shape", [(2, 7, 6), (2, 3, 7, 6)])
def test_positions_from_start_index_equal_start_index(shape):
    layer = layers.PositionEmbedding(sequence_length=12)
    x = np.zeros(shape, "float32")
    by_start = numpy_of(layer(x, start_index=4))
    for positions in (4 + np.arange(7), np.tile(4 + np.arange(7), (2, 1))):
        by_ids = numpy_of(layer(x, positions=ops.convert_to_tensor(positions)))
        np.testing.assert_array_equal(by_ids, by_start)


def test_per_example_positions_pick_table_rows():
    layer = layers.PositionEmbedding(sequence_length=12)
    output = numpy_of(layer(np.zeros((2, 3, 7, 6)), positions=POSITIONS))
    table = numpy_of(layer.embeddings)
    for b in range(2):
        for j in range(3):
            np.testing.assert_array_equal(output[b, j], table[POSITIONS[b]])


def test_rows_follow_start_index():
    layer = layers.PositionEmbedding(sequence_length=10)
    full = numpy_of(layer(np.zeros((2, 10, 4))))
    part = numpy_of(layer(np.zeros((2, 3, 4)), start_index=6))
    np.testing.assert_array_equal(part, full[:, 6:9])
    table = numpy_of(layer.embeddings)
    np.testing.assert_array_equal(full[1], table)


def test_positions_past_the_table_are_an_error():
    layer = layers.PositionEmbedding(sequence_length=10)
    layer(np.zeros((1, 10, 4)))
    with pytest.raises(ValueError, match=r"sequence_length=10.*length 11"):
        layer(np.zeros((1, 11, 4)))
    with pytest.raises(ValueError, match=r"length 2 and start_index=9"):
        layer(np.zeros((1, 2, 4)), start_index=9)
    with pytest.raises(ValueError, match=r"length 2 and start_index=9"):
        layer(np.zeros((1, 2, 4)), start_index=ops.convert_to_tensor(9))


@pytest.mark.parametrize(
    "positions, values",
    [([3, 4, 10], "from 3 to 10"), ([-1, 0, 1], "from -1 to 1")],
)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_position_ids_outside_the_table_are_an_error(
    positions, values, as_tensor
):
    layer = layers.PositionEmbedding(sequence_length=10)
    if as_tensor:
        positions = ops.convert_to_tensor(positions, "int32")
    with pytest.raises(
        ValueError, match=f"sequence_length=10.*positions with values {values}"
    ):
        layer(np.zeros((2, 3, 4)), positions=positions)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"positions": np.array([0.0, 1.0, 2.0])},
            r"`positions` must hold integer.*dtype float",
        ),
        (
            {"positions": np.array([True, False, True])},
            r"`positions` must hold integer.*dtype bool",
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
            {"positions": np.zeros((3, 3), "int32")},
            r"T=3 and B=2.*Received: positions with shape \(3, 3\)",
        ),
        (
            {"positions": np.arange(3), "start_index": 2},
            r"either `positions` or `start_index`.*start_index=2",
        ),
    ],
)
def test_bad_positions_name_the_argument(kwargs, message):
    layer = layers.PositionEmbedding(sequence_length=10)
    with pytest.raises(ValueError, match=message):
        layer(np.zeros((2, 3, 4)), **kwargs)


def test_rank_2_inputs_name_the_argument():
    with pytest.raises(ValueError, match=r"`inputs` must have rank 3 or more"):
        layers.PositionEmbedding(sequence_length=10)(keras.ops.zeros((4, 8)))


@pytest.mark.parametrize("value", [0, -1, None, 2.5])
def test_bad_sequence_length(value):
    with pytest.raises(ValueError, match=f"Received: sequence_length={value}"):
        layers.PositionEmbedding(sequence_length=value)


def test_table_is_readable_under_keras_hubs_attribute_name():
    ours, theirs = same_table_layers(8, 4)
    np.testing.assert_array_equal(
        numpy_of(ours.position_embeddings),
        numpy_of(theirs.position_embeddings),
    )
    assert ours.position_embeddings is ours.embeddings
