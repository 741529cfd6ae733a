import inspect

import keras
import keras_hub
import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

IDS = np.array([[5, 3, 9, 2, 0, 0], [7, 1, 0, 0, 0, 0]], "int32")
# Per-example position ids: a packed first row, a shifted second row.
POSITIONS = np.array([[0, 1, 2, 0, 1, 2], [4, 5, 6, 7, 8, 9]], "int32")


def numpy_token_and_position_embedding(ids, table, positions):
    return table[ids] * np.sqrt(table.shape[1]) + positions[: ids.shape[1]]


class TokenAndPositionEmbeddingTest(LayerTestCase):
    def test_layer_contract_sinusoidal(self):
        self.run_layer_test(
            layers.TokenAndPositionEmbedding,
            init_kwargs={
                "vocabulary_size": 12,
                "embedding_dim": 8,
                "mask_zero": True,
            },
            input_data=IDS,
            expected_output_shape=(2, 6, 8),
        )

    def test_layer_contract_learned(self):
        self.run_layer_test(
            layers.TokenAndPositionEmbedding,
            init_kwargs={
                "vocabulary_size": 12,
                "embedding_dim": 8,
                "sequence_length": 16,
                "position": "learned",
            },
            input_data=IDS,
            expected_output_shape=(2, 6, 8),
        )

    def test_layer_contract_with_positions(self):
        self.run_layer_test(
            layers.TokenAndPositionEmbedding,
            init_kwargs={
                "vocabulary_size": 12,
                "embedding_dim": 8,
                "sequence_length": 16,
                "position": "learned",
            },
            input_data={"inputs": IDS, "positions": POSITIONS},
            expected_output_shape=(2, 6, 8),
        )

    def test_layer_contract_tied_logits(self):
        layer_kwargs = {"vocabulary_size": 12, "embedding_dim": 8}
        self.run_layer_test(
            layers.TokenAndPositionEmbedding,
            init_kwargs=layer_kwargs,
            input_data=np.random.normal(size=(2, 5, 8)).astype("float32"),
            call_kwargs={"reverse": True},
            expected_output_shape=(2, 5, 12),
        )


def test_matches_numpy_reference():
    layer = layers.TokenAndPositionEmbedding(
        12, embedding_dim=8, mask_zero=True
    )
    output = ops.convert_to_numpy(layer(IDS))
    table = ops.convert_to_numpy(layer.token_embedding.embeddings)
    positions = ops.convert_to_numpy(
        keras.ops.zeros((1, 6, 8))
        + layer.position_embedding(keras.ops.zeros((1, 6, 8)))
    )[0]
    expected = numpy_token_and_position_embedding(IDS, table, positions)
    np.testing.assert_allclose(output, expected, atol=1e-5)


def test_reverse_reuses_the_embedding_matrix():
    layer = layers.TokenAndPositionEmbedding(12, embedding_dim=8)
    hidden = layer(IDS)
    logits = ops.convert_to_numpy(layer(hidden, reverse=True))
    table = ops.convert_to_numpy(layer.token_embedding.embeddings)
    expected = ops.convert_to_numpy(hidden) @ table.T
    np.testing.assert_allclose(logits, expected, atol=1e-4)
    assert len(layer.weights) == 1  # one matrix serves both directions


def test_mask_zero_marks_padding():
    layer = layers.TokenAndPositionEmbedding(
        12, embedding_dim=8, mask_zero=True
    )
    mask = layer.compute_mask(ops.convert_to_tensor(IDS))
    np.testing.assert_array_equal(ops.convert_to_numpy(mask), IDS != 0)
    tokens = keras.Input((None,), dtype="int32")
    assert layer(tokens)._keras_mask is not None


def test_learned_positions_need_a_sequence_length():
    with pytest.raises(ValueError, match="Received: sequence_length=None"):
        layers.TokenAndPositionEmbedding(
            12, embedding_dim=8, position="learned"
        )


def test_learned_positions_past_the_end_are_an_error():
    layer = layers.TokenAndPositionEmbedding(
        12, embedding_dim=8, sequence_length=4, position="learned"
    )
    with pytest.raises(ValueError, match=r"sequence_length=4.*length 6"):
        layer(IDS)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocabulary_size": 0, "embedding_dim": 8}, "vocabulary_size=0"),
        ({"vocabulary_size": 12, "embedding_dim": -1}, "embedding_dim=-1"),
        (
            {"vocabulary_size": 12, "embedding_dim": 8, "position": "rope"},
            "position='rope'",
        ),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=f"Received: {message}"):
        layers.TokenAndPositionEmbedding(**kwargs)


def test_reverse_with_wrong_width_names_the_argument():
    layer = layers.TokenAndPositionEmbedding(12, embedding_dim=8)
    layer(IDS)
    with pytest.raises(ValueError, match=r"embedding_dim=8.*\(2, 5, 6\)"):
        layer(np.zeros((2, 5, 6), "float32"), reverse=True)


def test_keras_hub_positional_order_is_a_type_error():
    # keras-hub: (vocabulary_size, sequence_length, embedding_dim). Here
    # only vocabulary_size is positional, so the port fails loudly instead
    # of building a width-8 embedding with 16 positions.
    keras_hub.layers.TokenAndPositionEmbedding(100, 16, 8)
    with pytest.raises(TypeError, match="positional"):
        layers.TokenAndPositionEmbedding(100, 16, 8)
    with pytest.raises(TypeError, match="positional"):
        layers.TokenAndPositionEmbedding(100, 16)
    layer = layers.TokenAndPositionEmbedding(
        100, sequence_length=16, embedding_dim=8, position="learned"
    )
    assert keras.ops.shape(layer(np.ones((2, 16), "int32"))) == (2, 16, 8)


def positional_arguments(layer_cls):
    """Names of the constructor arguments that may be passed by position."""
    parameters = inspect.signature(layer_cls.__init__).parameters.values()
    return [
        p.name
        for p in parameters
        if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self"
    ]


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (layers.TokenAndPositionEmbedding, "TokenAndPositionEmbedding"),
        (layers.PositionEmbedding, "PositionEmbedding"),
        (layers.SinusoidalPositionEncoding, "SinePositionEncoding"),
    ],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_positional_arguments_mean_what_they_mean_in_keras_hub(ours, theirs):
    # Every argument we accept by position sits at the same position in the
    # keras-hub counterpart, so a positional call means the same or fails.
    ours_positional = positional_arguments(ours)
    theirs_positional = positional_arguments(getattr(keras_hub.layers, theirs))
    assert ours_positional, ours
    assert ours_positional == theirs_positional[: len(ours_positional)]


def test_positions_pass_through_to_the_position_layer():
    for position in ("sinusoidal", "learned"):
        layer = layers.TokenAndPositionEmbedding(
            12, embedding_dim=8, sequence_length=10, position=position
        )
        output = ops.convert_to_numpy(layer(IDS, positions=POSITIONS))
        table = ops.convert_to_numpy(layer.token_embedding.embeddings)
        zeros = np.zeros((2, 6, 8), "float32")
        positions = ops.convert_to_numpy(
            layer.position_embedding(zeros, positions=POSITIONS)
        )
        expected = table[IDS] * np.sqrt(8) + positions
        np.testing.assert_allclose(output, expected, atol=1e-5)
        shifted = ops.convert_to_numpy(layer(IDS, start_index=3))
        by_ids = layer(IDS, positions=3 + np.arange(6, dtype="int32"))
        np.testing.assert_allclose(
            ops.convert_to_numpy(by_ids), shifted, atol=1e-6
        )


@pytest.mark.parametrize("positions", [None, POSITIONS])
def test_equals_keras_hub_with_learned_unscaled_positions(positions):
    ours = layers.TokenAndPositionEmbedding(
        12,
        embedding_dim=8,
        sequence_length=10,
        position="learned",
        scale_embeddings=False,
    )
    theirs = keras_hub.layers.TokenAndPositionEmbedding(12, 10, 8)
    ours.build(IDS.shape)
    theirs.build(IDS.shape)
    theirs.token_embedding.set_weights(ours.token_embedding.get_weights())
    theirs.position_embedding.set_weights(ours.position_embedding.get_weights())
    np.testing.assert_allclose(
        ops.convert_to_numpy(ours(IDS, positions=positions)),
        ops.convert_to_numpy(theirs(IDS, positions=positions)),
        atol=1e-6,
    )


def test_positions_with_reverse_are_an_error():
    layer = layers.TokenAndPositionEmbedding(12, embedding_dim=8)
    hidden = layer(IDS)
    with pytest.raises(ValueError, match=r"`positions`.*reverse=True"):
        layer(hidden, positions=POSITIONS, reverse=True)


def test_learned_position_ids_past_the_table_are_an_error():
    layer = layers.TokenAndPositionEmbedding(
        12, embedding_dim=8, sequence_length=6, position="learned"
    )
    with pytest.raises(ValueError, match=r"sequence_length=6.*from 0 to 9"):
        layer(IDS, positions=POSITIONS)
