import keras
import keras_hub
import numpy as np
import pytest
from keras import ops
from references import lengths_mask
from references import numpy_attention
from references import numpy_feedforward
from references import numpy_residual
from references import to_numpy

from keras_attention import layers
from keras_attention.testing import LayerTestCase
from keras_attention.utils.masks import keras_mask

RNG = np.random.default_rng(11)
# The key bias adds q . b_k to every logit of a query row, which cancels in
# the softmax: it never gets a gradient.
KEY_BIAS = ("key/bias",)


def random(*shape):
    return RNG.normal(size=shape).astype("float32")


def numpy_transformer_encoder_block(x, mask, weights, norm_first):
    """Float64 reference. weights: the block's get_weights() order."""
    weights = [np.float64(w) for w in weights]
    # [attention x8][self_attention_norm x2][feedforward_norm x2][dense x4]
    attention, (g1, b1), (g2, b2) = weights[:8], weights[8:10], weights[10:12]
    w1, c1, w2, c2 = weights[12:]
    pairwise = mask[:, :, None] & mask[:, None, :]

    def sublayer(x, fn, gamma, beta):
        return numpy_residual(x, fn, gamma, beta, norm_first)

    x = sublayer(
        x, lambda h: numpy_attention(h, h, attention, pairwise), g1, b1
    )
    return sublayer(x, lambda h: numpy_feedforward(h, w1, c1, w2, c2), g2, b2)


class TransformerEncoderBlockTest(LayerTestCase):
    def test_layer_contract_with_padding(self):
        self.run_layer_test(
            layers.TransformerEncoderBlock,
            init_kwargs={
                "num_heads": 2,
                "intermediate_dim": 8,
                "dropout": 0.1,
                "seed": 3,
            },
            input_data={
                "inputs": random(2, 4, 8),
                "padding_mask": lengths_mask([4, 2], 4),
            },
            expected_output_shape=(2, 4, 8),
            static_weights=KEY_BIAS,
            tolerance=1e-4,
        )


@pytest.mark.parametrize("norm_first", [False, True])
def test_matches_numpy_reference(norm_first):
    block = layers.TransformerEncoderBlock(
        num_heads=2, intermediate_dim=12, dropout=0.0, norm_first=norm_first
    )
    x = random(2, 5, 8)
    mask = lengths_mask([5, 3], 5)
    actual = to_numpy(block(x, padding_mask=mask))
    names = [w.path.split("/", 1)[1] for w in block.weights]
    assert names[8:10] == [
        "self_attention_norm/gamma",
        "self_attention_norm/beta",
    ]
    expected = numpy_transformer_encoder_block(
        np.float64(x), mask, block.get_weights(), norm_first
    )
    # Real positions only: padded queries are defined but meaningless.
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-4)


def test_attention_scores_ignore_padding_and_sum_to_one():
    block = layers.TransformerEncoderBlock(num_heads=2, intermediate_dim=8)
    mask = lengths_mask([4, 2], 4)
    _, scores = block(
        random(2, 4, 8), padding_mask=mask, return_attention_scores=True
    )
    scores = to_numpy(scores)
    assert scores.shape == (2, 2, 4, 4)
    assert np.all(scores[1, :, :, 2:] == 0.0)
    np.testing.assert_allclose(scores[0].sum(-1), 1.0, atol=1e-5)


def test_dropout_only_in_training():
    block = layers.TransformerEncoderBlock(
        num_heads=2, intermediate_dim=8, dropout=0.5, seed=1
    )
    x = random(2, 4, 8)
    first = to_numpy(block(x, training=False))
    np.testing.assert_array_equal(first, to_numpy(block(x, training=False)))
    assert not np.allclose(first, to_numpy(block(x, training=True)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0, "intermediate_dim": 8}, "Received: num_heads=0"),
        (
            {"num_heads": 2, "intermediate_dim": -1},
            "Received: intermediate_dim=-1",
        ),
        (
            {"num_heads": 2, "intermediate_dim": 8, "dropout": 1.0},
            "Received: dropout=1.0",
        ),
    ],
)
def test_bad_constructor_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        layers.TransformerEncoderBlock(**kwargs)


def test_width_not_divisible_by_heads_is_a_clear_error():
    block = layers.TransformerEncoderBlock(num_heads=3, intermediate_dim=8)
    with pytest.raises(ValueError, match="num_heads=3"):
        block(random(1, 2, 8))


def test_implicit_keras_mask_merges_with_explicit_padding_mask():
    """An embedding's mask (mask_zero) AND `padding_mask` == explicit AND."""
    block = layers.TransformerEncoderBlock(num_heads=2, intermediate_dim=8)
    ids = np.array([[3, 0, 5, 6, 7], [3, 4, 5, 0, 0]], "int32")
    embedded = keras.layers.Embedding(10, 8, mask_zero=True)(ids)
    plain = ops.convert_to_tensor(ops.convert_to_numpy(embedded))
    explicit = lengths_mask([5, 5], 5)
    explicit[0, 3] = False  # a position the Keras mask keeps
    implicit = ids != 0
    merged = to_numpy(block(embedded, padding_mask=explicit))
    reference = to_numpy(block(plain, padding_mask=explicit & implicit))
    explicit_only = to_numpy(block(plain, padding_mask=explicit))
    np.testing.assert_allclose(merged, reference, atol=1e-6)
    keep = explicit & implicit
    assert not np.allclose(merged[keep], explicit_only[keep], atol=1e-3)
    # The Keras mask alone is read too, the output carries it on, and the
    # input keeps it for the next layer.
    alone = block(embedded)
    np.testing.assert_allclose(
        to_numpy(alone),
        to_numpy(block(plain, padding_mask=implicit)),
        atol=1e-6,
    )
    np.testing.assert_array_equal(
        ops.convert_to_numpy(keras_mask(alone)), implicit
    )
    np.testing.assert_array_equal(
        ops.convert_to_numpy(keras_mask(embedded)), implicit
    )


def test_implicit_mask_in_a_functional_model():
    ids = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10, 8, mask_zero=True)
    block = layers.TransformerEncoderBlock(num_heads=2, intermediate_dim=8)
    model = keras.Model(ids, block(block(embedding(ids))))
    tokens = np.array([[3, 4, 5, 0], [3, 0, 0, 0]], "int32")
    padded = np.pad(tokens, ((0, 0), (0, 3)))
    real = tokens != 0
    np.testing.assert_allclose(
        to_numpy(model(padded))[:, :4][real],
        to_numpy(model(tokens))[real],
        atol=1e-5,
    )


def test_constructor_is_keyword_only():
    # keras-hub's order is (intermediate_dim, num_heads): a positional port
    # must fail rather than build other shapes.
    with pytest.raises(TypeError):
        layers.TransformerEncoderBlock(16, 2)
    with pytest.raises(TypeError):
        layers.TransformerEncoderBlock(2, intermediate_dim=16)


@pytest.mark.parametrize("norm_first", [False, True])
def test_keras_hub_weights_give_equal_outputs(norm_first):
    theirs = keras_hub.layers.TransformerEncoder(
        intermediate_dim=16,
        num_heads=2,
        normalize_first=norm_first,
        layer_norm_epsilon=1e-6,
    )
    ours = layers.TransformerEncoderBlock(
        num_heads=2, intermediate_dim=16, dropout=0.0, norm_first=norm_first
    )
    theirs.build((None, 5, 8))
    ours.build((None, 5, 8))
    # Perturb keras-hub's weights so that norms and biases matter too.
    theirs.set_weights(
        [w + 0.1 * random(*w.shape) for w in theirs.get_weights()]
    )
    ours.set_weights(theirs.get_weights())
    x, mask = random(2, 5, 8), lengths_mask([5, 3], 5)
    expected = to_numpy(theirs(x, padding_mask=mask))
    actual = to_numpy(ours(x, padding_mask=mask))
    # Real tokens only: keras-hub masks padded tokens as keys only.
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-5)
