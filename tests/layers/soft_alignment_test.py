import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(11)


def random(*shape):
    return RNG.normal(size=shape).astype("float32")


def lengths_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def numpy_masked_softmax(scores, mask, axis):
    scores = np.where(mask, scores, -np.inf)
    top = np.max(scores, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    exp = np.where(mask, np.exp(scores - top), 0.0)
    total = exp.sum(axis=axis, keepdims=True)
    return np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)


def numpy_soft_alignment(premise, hypothesis, weights, p_mask, h_mask):
    """Float64 reference; `weights` = [(kernel, bias), ...] of F (ReLU)."""

    def feed_forward(x):
        for kernel, bias in weights:
            x = np.maximum(x @ np.float64(kernel) + np.float64(bias), 0.0)
        return x

    scores = np.einsum(
        "bth,bsh->bts", feed_forward(premise), feed_forward(hypothesis)
    )
    mask = p_mask[:, :, None] & h_mask[:, None, :]
    premise_weights = numpy_masked_softmax(scores, mask, axis=2)
    hypothesis_weights = numpy_masked_softmax(scores, mask, axis=1)
    beta = np.einsum("bts,bsf->btf", premise_weights, hypothesis)
    alpha = np.einsum("bts,btf->bsf", hypothesis_weights, premise)
    return beta, alpha, premise_weights, hypothesis_weights.transpose(0, 2, 1)


class SoftAlignmentTest(LayerTestCase):
    def test_layer_contract_with_padding(self):
        self.run_layer_test(
            layers.SoftAlignment,
            init_kwargs={"hidden_dim": 6, "dropout": 0.1, "seed": 3},
            input_data={
                "premise": random(2, 5, 4),
                "hypothesis": random(2, 3, 4),
                "premise_mask": lengths_mask([5, 2], 5),
                "hypothesis_mask": lengths_mask([3, 1], 3),
            },
            call_kwargs={"return_attention_scores": True},
            expected_output_shape=((2, 5, 4), (2, 3, 4), (2, 5, 3), (2, 3, 5)),
        )

    def test_matches_numpy_reference(self):
        layer = layers.SoftAlignment(hidden_dim=5, num_layers=2)
        premise, hypothesis = random(3, 6, 4), random(3, 4, 4)
        p_mask = lengths_mask([6, 3, 1], 6)
        h_mask = lengths_mask([4, 4, 2], 4)
        outputs = layer(
            premise,
            hypothesis,
            premise_mask=p_mask,
            hypothesis_mask=h_mask,
            return_attention_scores=True,
        )
        expected = numpy_soft_alignment(
            np.float64(premise),
            np.float64(hypothesis),
            [
                (to_numpy(d.kernel), to_numpy(d.bias))
                for d in layer.attend_layers
            ],
            p_mask,
            h_mask,
        )
        for actual, reference in zip(outputs, expected):
            np.testing.assert_allclose(to_numpy(actual), reference, atol=1e-5)

    def test_padding_gets_exactly_zero_weight_in_both_directions(self):
        layer = layers.SoftAlignment(hidden_dim=4)
        p_mask = lengths_mask([3, 5], 5)
        h_mask = lengths_mask([2, 4], 4)
        _, _, premise_weights, hypothesis_weights = layer(
            random(2, 5, 3),
            random(2, 4, 3),
            premise_mask=p_mask,
            hypothesis_mask=h_mask,
            return_attention_scores=True,
        )
        premise_weights = to_numpy(premise_weights)  # (B, T, S)
        hypothesis_weights = to_numpy(hypothesis_weights)  # (B, S, T)
        pair = p_mask[:, :, None] & h_mask[:, None, :]
        self.assertTrue(np.all(premise_weights[~pair] == 0.0))
        self.assertTrue(
            np.all(hypothesis_weights[~pair.transpose(0, 2, 1)] == 0.0)
        )
        np.testing.assert_allclose(
            premise_weights.sum(-1)[p_mask], 1.0, atol=1e-6
        )
        np.testing.assert_allclose(
            hypothesis_weights.sum(-1)[h_mask], 1.0, atol=1e-6
        )

    def test_empty_sentence_gives_zero_alignment(self):
        layer = layers.SoftAlignment(hidden_dim=4)
        beta, alpha = layer(
            random(2, 4, 3),
            random(2, 3, 3),
            premise_mask=lengths_mask([0, 4], 4),
            hypothesis_mask=lengths_mask([3, 3], 3),
        )
        beta, alpha = to_numpy(beta), to_numpy(alpha)
        self.assertTrue(
            np.all(np.isfinite(beta)) and np.all(np.isfinite(alpha))
        )
        # Empty premise: nothing to align a hypothesis token with.
        np.testing.assert_array_equal(alpha[0], 0.0)
        np.testing.assert_array_equal(beta[0], 0.0)
        self.assertGreater(np.abs(alpha[1]).sum(), 0.0)

    def test_different_batch_sizes_raise(self):
        layer = layers.SoftAlignment(hidden_dim=4)
        with pytest.raises(ValueError, match="same batch size"):
            layer(random(2, 4, 3), random(3, 4, 3))

    def test_different_feature_widths_raise(self):
        layer = layers.SoftAlignment(hidden_dim=4)
        with pytest.raises(ValueError, match="same last dimension"):
            layer(random(2, 4, 3), random(2, 4, 5))

    def test_bad_arguments_raise(self):
        with pytest.raises(ValueError, match="Received: hidden_dim=0"):
            layers.SoftAlignment(hidden_dim=0)
        with pytest.raises(ValueError, match="Received: dropout=1.5"):
            layers.SoftAlignment(dropout=1.5)
