import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(9)


def numpy_directional_self_attention(x, mask, weights, direction, c=5.0):
    """Float64 reference with the fusion gate; weights in layer order."""
    wq, wk, bk, wf, bf = (np.float64(w) for w in weights)
    n = x.shape[1]
    t, s = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    allowed = {"forward": s < t, "backward": s > t, None: s != t}[direction]
    allowed = allowed[None] & mask[:, :, None] & mask[:, None, :]
    logits = c * np.tanh(((x @ wq)[:, :, None] + (x @ wk + bk)[:, None]) / c)
    logits = np.where(allowed[..., None], logits, -np.inf)
    peak = np.max(logits, axis=2, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    exp = np.where(allowed[..., None], np.exp(logits - peak), 0.0)
    total = exp.sum(2, keepdims=True)
    probs = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    context = (probs * x[:, None]).sum(2)
    gate = 1 / (1 + np.exp(-(np.concatenate([x, context], -1) @ wf + bf)))
    return gate * x + (1 - gate) * context


def lengths_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(ops.cast(x, "float32")))


class DirectionalSelfAttentionTest(LayerTestCase):
    def test_layer_contract_forward_with_padding(self):
        self.run_layer_test(
            layers.DirectionalSelfAttention,
            init_kwargs={"direction": "forward", "block_size": 2},
            input_data={
                "inputs": RNG.normal(size=(2, 5, 4)).astype("float32"),
                "mask": lengths_mask([5, 1], 5),
            },
            expected_output_shape=(2, 5, 4),
        )

    def test_matches_numpy_reference(self):
        x = RNG.normal(size=(2, 5, 4))
        mask = lengths_mask([5, 3], 5)
        for direction in ("forward", "backward", None):
            layer = layers.DirectionalSelfAttention(direction=direction)
            output = layer(x.astype("float32"), mask=mask)
            expected = numpy_directional_self_attention(
                x, mask, [to_numpy(w) for w in layer.weights], direction
            )
            real = mask[..., None]
            np.testing.assert_allclose(
                to_numpy(output) * real, expected * real, atol=1e-5
            )

    def test_blocked_matches_unblocked(self):
        x = RNG.normal(size=(2, 7, 4)).astype("float32")
        mask = lengths_mask([7, 4], 7)
        full = layers.DirectionalSelfAttention(direction="backward")
        blocked = layers.DirectionalSelfAttention(
            direction="backward", block_size=3
        )
        expected = full(x, mask=mask)
        blocked.build(x.shape)
        blocked.set_weights(full.get_weights())
        np.testing.assert_allclose(
            to_numpy(blocked(x, mask=mask)), to_numpy(expected), atol=1e-6
        )

    def test_forward_output_never_depends_on_later_tokens(self):
        layer = layers.DirectionalSelfAttention(direction="forward")
        x = RNG.normal(size=(1, 6, 4)).astype("float32")
        changed = x.copy()
        changed[:, 4:] += 3.0
        a, b = to_numpy(layer(x)), to_numpy(layer(changed))
        np.testing.assert_allclose(a[:, :4], b[:, :4], atol=1e-6)
        assert np.abs(a[:, 4:] - b[:, 4:]).max() > 1e-3

    def test_first_token_under_forward_mask_gets_zero_context(self):
        layer = layers.DirectionalSelfAttention(
            direction="forward", use_fusion_gate=False
        )
        x = RNG.normal(size=(2, 3, 4)).astype("float32")
        np.testing.assert_array_equal(to_numpy(layer(x))[:, 0], 0.0)

    def test_half_precision_short_and_empty_rows_are_finite(self):
        x = (50 * RNG.normal(size=(3, 4, 4))).astype("float32")
        mask = lengths_mask([1, 0, 4], 4)
        for policy in ("mixed_float16", "mixed_bfloat16"):
            for direction in ("forward", "backward", None):
                layer = layers.DirectionalSelfAttention(
                    direction=direction, dtype=policy
                )
                self.assertTrue(
                    np.all(np.isfinite(to_numpy(layer(x, mask=mask))))
                )

    def test_bad_arguments_are_rejected(self):
        with pytest.raises(ValueError, match="Received: direction='up'"):
            layers.DirectionalSelfAttention(direction="up")
        with pytest.raises(ValueError, match="Received: tanh_scale=0"):
            layers.DirectionalSelfAttention(tanh_scale=0)
        layer = layers.DirectionalSelfAttention()
        layer(np.zeros((1, 3, 4), "float32"))
        with pytest.raises(ValueError, match=r"shape \(1, 3, 5\)"):
            layer(np.zeros((1, 3, 5), "float32"))

    def test_attention_scores_are_returned(self):
        layer = layers.DirectionalSelfAttention(direction="forward")
        _, scores = layer(
            keras.random.normal((2, 4, 3)), return_attention_scores=True
        )
        scores = to_numpy(scores)
        self.assertEqual(scores.shape, (2, 4, 4, 3))
        np.testing.assert_allclose(scores[:, 1:].sum(2), 1.0, atol=1e-5)
