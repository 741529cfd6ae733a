import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(12)
KEY_BIAS = ("key/bias",)


def random(*shape):
    return RNG.normal(size=shape).astype("float32")


def lengths_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x), dtype="float64")


def numpy_layer_norm(x, gamma, beta, epsilon=1e-6):
    mean = x.mean(-1, keepdims=True)
    variance = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def numpy_attention(query, value, weights, mask):
    """Multi-head attention; weights [Wq, bq, Wk, bk, Wv, bv, Wo, bo];
    mask (B, T, S) boolean. Fully masked rows give a zero attention output."""
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    q = np.einsum("btf,fnh->btnh", query, wq) + bq
    k = np.einsum("bsf,fnh->bsnh", value, wk) + bk
    v = np.einsum("bsf,fnh->bsnh", value, wv) + bv
    logits = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(q.shape[-1])
    mask = mask[:, None]
    logits = np.where(mask, logits, -np.inf)
    row_max = np.max(logits, -1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    exp = np.where(mask, np.exp(logits - row_max), 0.0)
    total = exp.sum(-1, keepdims=True)
    probs = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    attended = np.einsum("bnts,bsnh->btnh", probs, v)
    return np.einsum("btnh,nhf->btf", attended, wo) + bo


def numpy_feedforward(x, w1, b1, w2, b2):
    return np.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def numpy_transformer_decoder_block(x, memory, mask, memory_mask, weights):
    """Float64 post-norm reference; weights in get_weights() order."""
    w = [np.float64(v) for v in weights]
    self_att, (g1, b1), cross_att, (g2, b2) = w[:8], w[8:10], w[10:18], w[18:20]
    (g3, b3), (f1, c1, f2, c2) = w[20:22], w[22:]
    length = x.shape[1]
    causal = np.tril(np.ones((length, length), bool))
    self_mask = mask[:, :, None] & mask[:, None, :] & causal
    x = numpy_layer_norm(x + numpy_attention(x, x, self_att, self_mask), g1, b1)
    cross_mask = mask[:, :, None] & memory_mask[:, None, :]
    x = numpy_layer_norm(
        x + numpy_attention(x, memory, cross_att, cross_mask), g2, b2
    )
    return numpy_layer_norm(x + numpy_feedforward(x, f1, c1, f2, c2), g3, b3)


class TransformerDecoderBlockTest(LayerTestCase):
    def test_layer_contract_with_padding(self):
        self.run_layer_test(
            layers.TransformerDecoderBlock,
            init_kwargs={"num_heads": 2, "intermediate_dim": 8, "seed": 4},
            input_data={
                "inputs": random(2, 3, 8),
                "encoder_outputs": random(2, 4, 8),
                "padding_mask": lengths_mask([3, 2], 3),
                "encoder_padding_mask": lengths_mask([4, 1], 4),
            },
            expected_output_shape=(2, 3, 8),
            static_weights=KEY_BIAS,
            tolerance=1e-4,
        )


def test_matches_numpy_reference():
    block = layers.TransformerDecoderBlock(2, 12, dropout=0.0)
    x, memory = random(2, 4, 8), random(2, 5, 8)
    mask, memory_mask = lengths_mask([4, 3], 4), lengths_mask([5, 2], 5)
    actual = to_numpy(
        block(x, memory, padding_mask=mask, encoder_padding_mask=memory_mask)
    )
    names = [w.path.split("/", 1)[1] for w in block.weights]
    assert names[18] == "cross_attention_norm/gamma"
    expected = numpy_transformer_decoder_block(
        np.float64(x),
        np.float64(memory),
        mask,
        memory_mask,
        block.get_weights(),
    )
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_steps_equal_full_decoding(norm_first):
    block = layers.TransformerDecoderBlock(2, 8, norm_first=norm_first)
    x, memory = random(2, 5, 8), random(2, 6, 8)
    memory_mask = lengths_mask([6, 3], 6)
    full = to_numpy(block(x, memory, encoder_padding_mask=memory_mask))
    cross = block.compute_cross_attention_cache(memory)
    cache = np.zeros((2, 2, 5, 2, 4), "float32")
    steps = []
    for t in range(5):
        out, cache = block(
            x[:, t : t + 1],
            encoder_padding_mask=memory_mask,
            self_attention_cache=cache,
            cross_attention_cache=cross,
            cache_update_index=t,
        )
        steps.append(to_numpy(out))
    np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)


def test_outputs_never_depend_on_later_targets():
    block = layers.TransformerDecoderBlock(2, 8)
    x, memory = random(1, 5, 8), random(1, 3, 8)
    before = to_numpy(block(x, memory))
    changed = x.copy()
    changed[:, 3:] += 5.0
    after = to_numpy(block(changed, memory))
    np.testing.assert_allclose(after[:, :3], before[:, :3], atol=1e-5)
    assert not np.allclose(after[:, 3:], before[:, 3:])


def test_attention_scores_are_causal_and_skip_padded_sources():
    block = layers.TransformerDecoderBlock(2, 8)
    memory_mask = lengths_mask([3], 5)
    _, self_scores, cross_scores = block(
        random(1, 4, 8),
        random(1, 5, 8),
        encoder_padding_mask=memory_mask,
        return_attention_scores=True,
    )
    self_scores, cross_scores = to_numpy(self_scores), to_numpy(cross_scores)
    assert np.all(self_scores[..., np.triu(np.ones((4, 4), bool), 1)] == 0)
    assert np.all(cross_scores[..., 3:] == 0.0)
    np.testing.assert_allclose(cross_scores.sum(-1), 1.0, atol=1e-5)


def test_missing_encoder_outputs_and_cache_index_are_clear_errors():
    block = layers.TransformerDecoderBlock(2, 8)
    x = random(1, 2, 8)
    block(x, random(1, 3, 8))
    with pytest.raises(ValueError, match="Received: encoder_outputs=None"):
        block(x)
    with pytest.raises(ValueError, match="Received: cache_update_index=None"):
        block(
            x[:, :1],
            random(1, 3, 8),
            self_attention_cache=np.zeros((1, 2, 4, 2, 4), "float32"),
        )
