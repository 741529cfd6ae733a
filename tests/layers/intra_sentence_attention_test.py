import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(5)


def random(*shape):
    return RNG.normal(size=shape).astype("float32")


def lengths_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def numpy_buckets(length, max_distance):
    distance = np.arange(length)[:, None] - np.arange(length)[None, :]
    return np.where(
        np.abs(distance) > max_distance,
        2 * max_distance + 1,
        distance + max_distance,
    )


def numpy_intra_sentence_attention(
    inputs, dense, distance_bias, mask, max_distance
):
    """Float64 reference; `dense` = [(kernel, bias), ...] of F_intra."""
    f = inputs
    for kernel, bias in dense:
        f = np.maximum(f @ np.float64(kernel) + np.float64(bias), 0.0)
    length = inputs.shape[1]
    scores = np.einsum("bih,bjh->bij", f, f)
    scores = scores + distance_bias[numpy_buckets(length, max_distance)]
    pair = mask[:, :, None] & mask[:, None, :]
    scores = np.where(pair, scores, -np.inf)
    top = np.max(scores, axis=2, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    exp = np.where(pair, np.exp(scores - top), 0.0)
    total = exp.sum(2, keepdims=True)
    probs = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    attended = np.einsum("bij,bjf->bif", probs, inputs)
    return np.concatenate([inputs, attended], -1), probs


class IntraSentenceAttentionTest(LayerTestCase):
    def test_layer_contract_with_padding(self):
        # max_distance=2 so that every bucket, the shared "beyond" one
        # included, occurs in a 6-token sentence and can learn.
        self.run_layer_test(
            layers.IntraSentenceAttention,
            init_kwargs={
                "hidden_dim": 6,
                "max_distance": 2,
                "dropout": 0.1,
                "seed": 2,
                "distance_initializer": "random_normal",
            },
            input_data={
                "inputs": random(2, 6, 4),
                "mask": lengths_mask([6, 4], 6),
            },
            call_kwargs={"return_attention_scores": True},
            expected_output_shape=((2, 6, 8), (2, 6, 6)),
        )

    def test_matches_numpy_reference(self):
        layer = layers.IntraSentenceAttention(
            hidden_dim=5,
            max_distance=2,
            distance_initializer=keras.initializers.RandomNormal(seed=1),
        )
        inputs = random(3, 7, 4)
        mask = lengths_mask([7, 4, 1], 7)
        output, weights = layer(inputs, mask=mask, return_attention_scores=True)
        expected, probs = numpy_intra_sentence_attention(
            np.float64(inputs),
            [
                (to_numpy(d.kernel), to_numpy(d.bias))
                for d in layer.intra_layers
            ],
            np.float64(to_numpy(layer.distance_bias)),
            mask,
            max_distance=2,
        )
        np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)
        np.testing.assert_allclose(to_numpy(weights), probs, atol=1e-6)

    def test_distance_bias_alone_decides_attention(self):
        max_distance = 3
        layer = layers.IntraSentenceAttention(
            hidden_dim=4,
            max_distance=max_distance,
            kernel_initializer="zeros",
            bias_initializer="zeros",
        )
        inputs = random(1, 9, 4)
        layer.build(inputs.shape)
        # Bucket k holds distance k - 3 for k <= 6; bucket 7 is "beyond 3".
        buckets = np.array([0.5, -1.0, 2.0, 0.0, 1.5, -0.5, 1.0, 3.0])
        layer.distance_bias.assign(buckets.astype("float32"))
        _, weights = layer(inputs, return_attention_scores=True)
        weights = to_numpy(weights)[0]
        # F_intra is zero, so row i is softmax_j(d_{i-j}).
        logits = buckets[numpy_buckets(9, max_distance)]
        expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        np.testing.assert_allclose(weights, expected, atol=1e-6)
        # Every pair farther apart than max_distance shares one weight.
        far = np.abs(np.arange(9)[:, None] - np.arange(9)[None, :]) > 3
        row = weights[0][far[0]]
        np.testing.assert_allclose(row, row[0], atol=1e-7)
        # And the bias matters: the weights are far from uniform.
        self.assertGreater(np.ptp(weights[4]), 0.1)

    def test_empty_sentence_gives_input_and_zeros(self):
        layer = layers.IntraSentenceAttention(hidden_dim=4)
        inputs = random(2, 4, 3)
        output = to_numpy(layer(inputs, mask=lengths_mask([0, 2], 4)))
        self.assertTrue(np.all(np.isfinite(output)))
        np.testing.assert_allclose(output[0, :, :3], inputs[0], atol=1e-6)
        np.testing.assert_array_equal(output[0, :, 3:], 0.0)

    def test_output_keeps_the_keras_mask(self):
        tokens = keras.Input((None,), dtype="int32")
        x = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
        y = layers.IntraSentenceAttention(hidden_dim=4)(x)
        self.assertIsNotNone(getattr(y, "_keras_mask", None))

    def test_max_distance_below_one_raises(self):
        with pytest.raises(ValueError, match="Received: max_distance=0"):
            layers.IntraSentenceAttention(max_distance=0)
        with pytest.raises(ValueError, match="Received: max_distance=-2"):
            layers.IntraSentenceAttention(max_distance=-2)

    def test_bad_input_rank_raises(self):
        layer = layers.IntraSentenceAttention(hidden_dim=4)
        with pytest.raises(ValueError, match="rank 3"):
            layer(random(2, 4))
