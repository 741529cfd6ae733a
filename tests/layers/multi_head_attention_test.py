import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(7)
# The key bias adds q . b_k to every logit of a query row, which cancels in
# the softmax: it never gets a gradient. It exists for weight compatibility
# with keras.layers.MultiHeadAttention.
KEY_BIAS = ("key_dense/bias",)


def random(*shape):
    return RNG.normal(size=shape).astype("float32")


def lengths_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def numpy_multi_head_attention(query, value, weights, mask, num_heads):
    """Float64 reference: weights are keras-order [Wq, bq, Wk, bk, Wv, bv,
    Wo, bo]; mask is (B, T, S) boolean or None."""
    wq, bq, wk, bk, wv, bv, wo, bo = [np.float64(w) for w in weights]
    q = np.einsum("btf,fnh->btnh", query, wq) + bq
    k = np.einsum("bsf,fnh->bsnh", value, wk) + bk
    v = np.einsum("bsf,fnh->bsnh", value, wv) + bv
    logits = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(q.shape[-1])
    if mask is None:
        mask = np.ones(logits.shape[:1] + logits.shape[2:], bool)
    mask = mask[:, None]  # (B, 1, T, S)
    logits = np.where(mask, logits, -np.inf)
    row_max = np.max(logits, axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    exp = np.where(mask, np.exp(logits - row_max), 0.0)
    total = exp.sum(-1, keepdims=True)
    probs = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    attended = np.einsum("bnts,bsnh->btnh", probs, v)
    return np.einsum("btnh,nhf->btf", attended, wo) + bo, probs


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


class MultiHeadAttentionTest(LayerTestCase):
    def test_layer_contract_self_attention_with_padding(self):
        x = random(2, 6, 8)
        mask = lengths_mask([6, 3], 6)
        self.run_layer_test(
            layers.MultiHeadAttention,
            init_kwargs={"num_heads": 2, "key_dim": 4, "value_dim": 3},
            input_data={
                "query": x,
                "value": x,
                "query_mask": mask,
                "value_mask": mask,
            },
            expected_output_shape=(2, 6, 8),
            static_weights=KEY_BIAS,
        )

    def test_layer_contract_causal_cross_attention_with_scores(self):
        self.run_layer_test(
            layers.MultiHeadAttention,
            init_kwargs={
                "num_heads": 2,
                "key_dim": 4,
                "output_shape": 5,
                "window_size": 2,
                "use_gate": True,
            },
            input_data={
                "query": random(2, 4, 8),
                "value": random(2, 7, 6),
                "value_mask": lengths_mask([7, 2], 7),
            },
            call_kwargs={
                "use_causal_mask": True,
                "return_attention_scores": True,
            },
            expected_output_shape=((2, 4, 5), (2, 2, 4, 7)),
            static_weights=KEY_BIAS,
        )

    def test_layer_contract_with_cache(self):
        self.run_layer_test(
            layers.MultiHeadAttention,
            init_kwargs={"num_heads": 2, "key_dim": 4},
            input_data={
                "query": random(2, 1, 8),
                "value": random(2, 1, 8),
                "cache": random(2, 2, 5, 2, 4),
            },
            call_kwargs={"cache_update_index": 2, "use_causal_mask": True},
            expected_output_shape=((2, 1, 8), (2, 2, 5, 2, 4)),
            # Caches serve decoding, never training; TensorFlow also has no
            # gradient for the XLA slice update that writes them.
            run_training_check=False,
            run_padding_check=False,
        )

    def test_matches_numpy_reference(self):
        layer = layers.MultiHeadAttention(num_heads=2, key_dim=3)
        query, value = random(2, 4, 6), random(2, 5, 6)
        mask = lengths_mask([5, 2], 5)[:, None, :] & np.ones((2, 4, 1), bool)
        output, scores = layer(
            query, value, attention_mask=mask, return_attention_scores=True
        )
        weights = [to_numpy(w) for w in layer.weights]
        expected, probs = numpy_multi_head_attention(
            np.float64(query), np.float64(value), weights, mask, 2
        )
        np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)
        np.testing.assert_allclose(to_numpy(scores), probs, atol=1e-6)
        fused = layer(query, value, attention_mask=mask)
        np.testing.assert_allclose(to_numpy(fused), expected, atol=1e-5)


CONFIGS = [
    {},
    {"value_dim": 3, "output_shape": 10},
    {"use_bias": False},
    {"use_gate": True},
    {"sliding_window": 2},
]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("causal", [False, True])
def test_weight_transfer_matches_keras(config, causal):
    query, value = random(3, 5, 8), random(3, 5, 6)
    theirs = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, **config)
    ours = layers.MultiHeadAttention(num_heads=2, key_dim=4, **config)
    theirs.build(query.shape, value.shape)
    ours.build(query.shape, value.shape)
    ours.set_weights(theirs.get_weights())
    for a, b in zip(ours.weights, theirs.weights):
        assert tuple(a.shape) == tuple(b.shape)
    # Scores requested: both layers take their explicit path.
    expected, expected_scores = theirs(
        query, value, use_causal_mask=causal, return_attention_scores=True
    )
    actual, scores = ours(
        query, value, use_causal_mask=causal, return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), atol=1e-5)
    np.testing.assert_allclose(
        to_numpy(scores), to_numpy(expected_scores), atol=1e-5
    )
    # Fused path of ours against the explicit reference.
    fused = ours(query, value, use_causal_mask=causal)
    np.testing.assert_allclose(to_numpy(fused), to_numpy(expected), atol=1e-5)


def test_weight_transfer_matches_keras_with_padding_masks():
    x = random(2, 6, 8)
    mask = lengths_mask([6, 4], 6)
    theirs = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    ours = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    theirs.build(x.shape, x.shape)
    ours.build(x.shape, x.shape)
    ours.set_weights(theirs.get_weights())
    expected = theirs(x, x, attention_mask=mask[:, None, :] & mask[:, :, None])
    actual = ours(x, x, query_mask=mask, value_mask=mask)
    # Real query rows agree; padded rows differ by design (zeros, not means).
    np.testing.assert_allclose(
        to_numpy(actual)[mask], to_numpy(expected)[mask], atol=1e-5
    )


def test_keras_masks_are_used_in_a_functional_model():
    tokens = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(20, 8, mask_zero=True)(tokens)
    outputs = layers.MultiHeadAttention(2, 4)(embedded, embedded)
    model = keras.Model(tokens, outputs)
    ids = np.array([[3, 4, 5, 0, 0]])
    longer = np.array([[3, 4, 5, 0, 0, 0, 0]])
    np.testing.assert_allclose(
        to_numpy(model(longer))[:, :3],
        to_numpy(model(ids))[:, :3],
        atol=1e-6,
    )
    changed = np.array([[3, 4, 5, 0, 0]])
    changed[0, 3:] = 0
    assert outputs._keras_mask is not None


def test_cached_decoding_matches_full_causal_attention():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    x = random(2, 7, 8)
    full = to_numpy(layer(x, x, use_causal_mask=True))
    cache = np.zeros((2, 2, 7, 2, 4), "float32")
    # Prefill 3 tokens, then decode one at a time.
    prefix, cache = layer(
        x[:, :3],
        x[:, :3],
        cache=cache,
        cache_update_index=0,
        use_causal_mask=True,
    )
    steps = [to_numpy(prefix)]
    for t in range(3, 7):
        step, cache = layer(
            x[:, t : t + 1],
            x[:, t : t + 1],
            cache=cache,
            cache_update_index=t,
            use_causal_mask=True,
        )
        steps.append(to_numpy(step))
    np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)


def test_cross_attention_cache_matches_uncached():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    query, memory = random(2, 3, 8), random(2, 6, 8)
    mask = lengths_mask([6, 4], 6)
    expected = to_numpy(layer(query, memory, value_mask=mask))
    cache = layer.compute_cache(memory)
    actual, same_cache = layer(query, memory, value_mask=mask, cache=cache)
    np.testing.assert_allclose(to_numpy(actual), expected, atol=1e-6)
    np.testing.assert_array_equal(to_numpy(same_cache), to_numpy(cache))


def test_causal_mask_kept_with_scores_and_dropout():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.5)
    x = random(2, 5, 8)
    _, scores = layer(
        x,
        x,
        use_causal_mask=True,
        return_attention_scores=True,
        training=True,
    )
    future = np.triu(np.ones((5, 5), bool), k=1)
    assert np.all(to_numpy(scores)[:, :, future] == 0.0)
    # Outputs never depend on later inputs, in training mode with dropout.
    output = to_numpy(layer(x, x, use_causal_mask=True, training=False))
    changed = x.copy()
    changed[:, 3:] += 10.0
    after = to_numpy(layer(changed, changed, use_causal_mask=True))
    np.testing.assert_allclose(after[:, :3], output[:, :3], atol=1e-5)


def test_window_size_limits_attention_to_neighbours():
    layer = layers.MultiHeadAttention(num_heads=1, key_dim=4, window_size=1)
    x = random(1, 6, 8)
    _, scores = layer(x, x, return_attention_scores=True)
    distance = np.abs(np.arange(6)[:, None] - np.arange(6)[None, :])
    scores = to_numpy(scores)[0, 0]
    assert np.all(scores[distance > 1] == 0.0)
    assert np.all(scores[distance <= 1] > 0.0)


def test_sliding_window_is_keras_convention():
    a = layers.MultiHeadAttention(1, 4, sliding_window=3)
    b = layers.MultiHeadAttention(1, 4, window_size=2)
    x = random(1, 6, 8)
    _, sa = a(x, x, return_attention_scores=True)
    b.build(x.shape, x.shape)
    b.set_weights(a.get_weights())
    _, sb = b(x, x, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(sa), to_numpy(sb), atol=1e-6)


def test_fully_masked_query_rows_are_finite_and_zero_attention():
    layer = layers.MultiHeadAttention(1, 4, use_bias=False)
    x = random(2, 4, 8)
    mask = np.ones((2, 4, 4), bool)
    mask[1] = False
    fused = to_numpy(layer(x, x, attention_mask=mask))
    explicit, scores = layer(
        x, x, attention_mask=mask, return_attention_scores=True
    )
    assert np.all(fused[1] == 0.0)
    assert np.all(to_numpy(scores)[1] == 0.0)
    np.testing.assert_allclose(to_numpy(explicit), fused, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0, "key_dim": 4}, "Received: num_heads=0"),
        ({"num_heads": -2, "key_dim": 4}, "Received: num_heads=-2"),
        ({"num_heads": 2, "key_dim": 0}, "Received: key_dim=0"),
        (
            {"num_heads": 2, "key_dim": 4, "window_size": 0},
            "Received: window_size=0",
        ),
        (
            {"num_heads": 2, "key_dim": 4, "dropout": 1.5},
            "Received: dropout=1.5",
        ),
        (
            {"num_heads": 2, "key_dim": 4, "attention_axes": (1, 2)},
            "Received: attention_axes=(1, 2)",
        ),
    ],
)
def test_bad_constructor_arguments(kwargs, message):
    with pytest.raises(
        ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        layers.MultiHeadAttention(**kwargs)


def test_bad_call_inputs_name_the_argument():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    x = random(2, 5, 8)
    layer(x, x)
    with pytest.raises(ValueError, match=r"`query` must have rank 3.*\(5, 8\)"):
        layer(x[0], x[0])
    with pytest.raises(ValueError, match=r"last dimension of `value`.*8"):
        layer(x, random(2, 5, 6))
    with pytest.raises(ValueError, match=r"`attention_mask`.*\(2, 5, 4\)"):
        layer(x, x, attention_mask=np.ones((2, 5, 4), bool))
    with pytest.raises(ValueError, match=r"`cache`.*\(2, 2, 5, 3, 4\)"):
        layer(x, x, cache=random(2, 2, 5, 3, 4), cache_update_index=0)
    with pytest.raises(ValueError, match=r"`key`.*\(2, 4, 8\)"):
        layers.MultiHeadAttention(2, 4)(x, x, key=random(2, 4, 8))
