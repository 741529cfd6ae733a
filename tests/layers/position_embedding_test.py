import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase


class PositionEmbeddingTest(LayerTestCase):
    def test_layer_contract(self):
        self.run_layer_test(
            layers.PositionEmbedding,
            init_kwargs={"sequence_length": 16},
            input_data=np.random.normal(size=(2, 7, 6)).astype("float32"),
            expected_output_shape=(2, 7, 6),
        )


def test_rows_follow_start_index():
    layer = layers.PositionEmbedding(sequence_length=10)
    full = ops.convert_to_numpy(layer(np.zeros((2, 10, 4))))
    part = ops.convert_to_numpy(layer(np.zeros((2, 3, 4)), start_index=6))
    np.testing.assert_array_equal(part, full[:, 6:9])
    table = ops.convert_to_numpy(layer.embeddings)
    np.testing.assert_array_equal(full[1], table)


def test_positions_past_the_table_are_an_error():
    layer = layers.PositionEmbedding(sequence_length=10)
    layer(np.zeros((1, 10, 4)))
    with pytest.raises(ValueError, match=r"sequence_length=10.*length 11"):
        layer(np.zeros((1, 11, 4)))
    with pytest.raises(ValueError, match=r"length 2 and start_index=9"):
        layer(np.zeros((1, 2, 4)), start_index=9)


@pytest.mark.parametrize("value", [0, -1, None, 2.5])
def test_bad_sequence_length(value):
    with pytest.raises(ValueError, match=f"Received: sequence_length={value}"):
        layers.PositionEmbedding(sequence_length=value)
