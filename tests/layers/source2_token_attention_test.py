import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(5)


def numpy_source2_token_attention(x, mask, w1, b1, w2):
    hidden = x @ w1 + b1
    hidden = np.where(hidden > 0, hidden, np.expm1(np.minimum(hidden, 0)))
    logits = hidden @ w2
    logits = np.where(mask[..., None], logits, -np.inf)
    peak = np.max(logits, axis=1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    exp = np.where(mask[..., None], np.exp(logits - peak), 0.0)
    total = exp.sum(1, keepdims=True)
    weights = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    return (weights * np.where(mask[..., None], x, 0.0)).sum(1)


def lengths_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


class Source2TokenAttentionTest(LayerTestCase):
    def test_layer_contract_with_padding(self):
        self.run_layer_test(
            layers.Source2TokenAttention,
            init_kwargs={"hidden_dim": 3},
            input_data={
                "inputs": RNG.normal(size=(2, 5, 4)).astype("float32"),
                "mask": lengths_mask([5, 2], 5),
            },
            expected_output_shape=(2, 4),
        )

    def test_matches_numpy_reference_and_empty_row_is_zero(self):
        layer = layers.Source2TokenAttention()
        x = RNG.normal(size=(3, 4, 6))
        mask = lengths_mask([4, 1, 0], 4)
        output = ops.convert_to_numpy(layer(x.astype("float32"), mask=mask))
        w1, b1, w2 = (
            np.float64(ops.convert_to_numpy(w)) for w in layer.weights
        )
        expected = numpy_source2_token_attention(x, mask, w1, b1, w2)
        np.testing.assert_allclose(output, expected, atol=1e-5)
        np.testing.assert_allclose(output[1], x[1, 0], atol=1e-6)
        np.testing.assert_array_equal(output[2], 0.0)

    def test_output_has_no_bias_that_cancels(self):
        layer = layers.Source2TokenAttention()
        layer.build((None, 4, 6))
        paths = [w.path for w in layer.weights]
        assert not any("score_dense/bias" in p for p in paths), paths

    def test_bad_rank_is_rejected(self):
        with pytest.raises(ValueError, match="must have rank 3"):
            layers.Source2TokenAttention()(np.zeros((2, 4), "float32"))
        with pytest.raises(ValueError, match="Received: hidden_dim=0"):
            layers.Source2TokenAttention(hidden_dim=0)
