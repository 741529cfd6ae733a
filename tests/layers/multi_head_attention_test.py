import keras
import numpy as np
import pytest
from keras import ops

import keras_attention
from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(7)
# The key bias adds q . b_k to every logit of a query row, which cancels in
# the softmax: it never gets a gradient. It exists for weight compatibility
# with keras.layers.MultiHeadAttention.
KEY_BIAS = ("key/bias",)


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
                "sliding_window": 3,
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
                "cache": random(2, 2, 8, 2, 4),
            },
            call_kwargs={"cache_update_index": 2, "use_causal_mask": True},
            expected_output_shape=((2, 1, 8), (2, 2, 8, 2, 4)),
            # Caches serve decoding, never training; TensorFlow also has no
            # gradient for the XLA slice update that writes them.
            run_training_check=False,
            run_padding_check=False,
            # The unknown length check runs 1 and 4 new tokens (from slot 2
            # of the 8 cache slots); the cache's axis 1 holds keys and values.
            padding_inputs=("query", "value"),
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


def same_weight_cached_layers():
    """Our layer and keras-hub's `CachedMultiHeadAttention`, same weights."""
    import keras_hub

    ours = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    theirs = keras_hub.layers.CachedMultiHeadAttention(num_heads=2, key_dim=4)
    ours.build((None, None, 8), (None, None, 8))
    theirs.build((None, None, 8), (None, None, 8))
    theirs.set_weights(
        [w + 0.1 * random(*w.shape) for w in theirs.get_weights()]
    )
    ours.set_weights(theirs.get_weights())
    return ours, theirs


def test_stacked_cache_call_equals_keras_hubs_cached_attention():
    # keras-hub's stacked cache, its causal mask offset by the index; a
    # prefill of three tokens, then one at a time.
    ours, theirs = same_weight_cached_layers()
    x = random(2, 6, 8)
    ours_cache = theirs_cache = np.zeros((2, 2, 6, 2, 4), "float32")
    spans = [(0, 3), (3, 4), (4, 5), (5, 6)]
    for start, end in spans:
        query = x[:, start:end]
        causal = np.arange(6)[None, None, :] <= (
            start + np.arange(end - start)[None, :, None]
        )
        expected, theirs_cache = theirs(
            query,
            query,
            attention_mask=np.broadcast_to(causal, (2, end - start, 6)),
            cache=theirs_cache,
            cache_update_index=start,
        )
        actual, ours_cache = ours(
            query,
            query,
            cache=ours_cache,
            cache_update_index=start,
            use_causal_mask=True,
        )
        np.testing.assert_allclose(
            to_numpy(actual), to_numpy(expected), atol=1e-5
        )
        np.testing.assert_allclose(
            to_numpy(ours_cache), to_numpy(theirs_cache), atol=1e-6
        )


def test_call_with_cache_equals_the_stacked_call():
    # The heads-first pair and keras-hub's stacked layout hold the same
    # keys and values and give the same outputs and scores.
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    x = random(2, 5, 8)
    full = to_numpy(layer(x, x, use_causal_mask=True))
    pair = previous = keras_attention.ops.empty_cache(2, 2, 5, 4)
    stacked = np.zeros((2, 2, 5, 2, 4), "float32")
    steps = []
    for t in range(5):
        query = x[:, t : t + 1]
        step, scores, pair = layer.call_with_cache(
            query, pair, t, use_causal_mask=True, return_attention_scores=True
        )
        fast, _ = layer.call_with_cache(
            query, previous, t, use_causal_mask=True
        )  # one query without scores: the single-query kernel
        np.testing.assert_allclose(to_numpy(fast), to_numpy(step), atol=1e-6)
        previous = pair
        expected, expected_scores, stacked = layer(
            query,
            query,
            cache=stacked,
            cache_update_index=t,
            use_causal_mask=True,
            return_attention_scores=True,
        )
        np.testing.assert_allclose(to_numpy(step), to_numpy(expected), 1e-6)
        np.testing.assert_allclose(
            to_numpy(scores), to_numpy(expected_scores), atol=1e-6
        )
        steps.append(to_numpy(step))
    np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)
    np.testing.assert_allclose(
        to_numpy(keras_attention.ops.to_stacked_cache(pair)),
        to_numpy(stacked),
        atol=1e-6,
    )
    # Cross-attention: keys and values projected once, heads first.
    memory, mask = random(2, 6, 8), lengths_mask([6, 4], 6)
    expected = to_numpy(layer(x, memory, value_mask=mask))
    cross = layer.compute_key_value_cache(memory)
    assert tuple(ops.shape(cross[0])) == (2, 2, 6, 4)
    actual, _ = layer.call_with_cache(x, cross, value_mask=mask)
    np.testing.assert_allclose(to_numpy(actual), expected, atol=1e-5)


def test_call_with_cache_errors_name_the_argument():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    x = random(2, 1, 8)
    with pytest.raises(ValueError, match="Build the MultiHeadAttention"):
        layer.call_with_cache(x, keras_attention.ops.empty_cache(2, 2, 3, 4))
    layer(x, x)
    with pytest.raises(ValueError, match="Received: cache="):
        layer.call_with_cache(x, np.zeros((2, 2, 3, 2, 4), "float32"))
    with pytest.raises(ValueError, match=r"cache\[0\] with shape"):
        layer.call_with_cache(x, keras_attention.ops.empty_cache(2, 3, 3, 4))


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


def test_sliding_window_limits_attention_to_neighbours():
    layer = layers.MultiHeadAttention(num_heads=1, key_dim=4, sliding_window=2)
    x = random(1, 6, 8)
    _, scores = layer(x, x, return_attention_scores=True)
    distance = np.abs(np.arange(6)[:, None] - np.arange(6)[None, :])
    scores = to_numpy(scores)[0, 0]
    assert np.all(scores[distance > 1] == 0.0)
    assert np.all(scores[distance <= 1] > 0.0)


def test_deprecated_window_size_is_the_same_band():
    a = layers.MultiHeadAttention(1, 4, sliding_window=3)
    with pytest.warns(DeprecationWarning, match="sliding_window=3"):
        b = layers.MultiHeadAttention(1, 4, window_size=2)
    assert b.sliding_window == 3
    assert "window_size" not in b.get_config()
    x = random(1, 6, 8)
    _, sa = a(x, x, return_attention_scores=True)
    b.build(x.shape, x.shape)
    b.set_weights(a.get_weights())
    _, sb = b(x, x, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(sa), to_numpy(sb), atol=1e-6)
    with pytest.raises(ValueError, match="window_size=2, sliding_window=3"):
        layers.MultiHeadAttention(1, 4, window_size=2, sliding_window=3)


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
            {"num_heads": 2, "key_dim": 4, "attention_axes": "time"},
            "Received: attention_axes='time'",
        ),
        (
            {"num_heads": 2, "key_dim": 4, "output_shape": 8.0},
            "Received: output_shape=8.0",
        ),
        (
            {"num_heads": 2, "key_dim": 4, "sliding_window": 0},
            "Received: sliding_window=0",
        ),
        (
            {
                "num_heads": 2,
                "key_dim": 4,
                "flash_attention": True,
                "dropout": 0.1,
            },
            "Received: flash_attention=True, dropout=0.1",
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


def test_attention_axes_out_of_range_is_named():
    layer = layers.MultiHeadAttention(2, 4, attention_axes=3)
    with pytest.raises(ValueError, match=r"Received: attention_axes=\(3,\)"):
        layer(random(2, 3, 4, 8), random(2, 3, 4, 8))


# Mask shapes Keras broadcasts, for (B, N, T, S) = (2, 2, 5, 5) scores.
CAUSAL = np.tril(np.ones((5, 5), bool))


@pytest.mark.parametrize(
    "mask",
    [
        CAUSAL,
        CAUSAL[None],
        np.tile(CAUSAL, (2, 1, 1)),
        CAUSAL[None, None],
        np.tile(CAUSAL, (2, 2, 1, 1)),
    ],
    ids=["T,S", "1,T,S", "B,T,S", "1,1,T,S", "B,N,T,S"],
)
def test_broadcastable_attention_masks(mask):
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    x = random(2, 5, 8)
    expected = to_numpy(layer(x, x, use_causal_mask=True))
    actual = layer(x, x, attention_mask=mask)
    np.testing.assert_allclose(to_numpy(actual), expected, atol=1e-5)
    # Combined with padding masks as before.
    padding = lengths_mask([5, 3], 5)
    expected = to_numpy(layer(x, x, value_mask=padding, use_causal_mask=True))
    actual = layer(x, x, attention_mask=mask, value_mask=padding)
    np.testing.assert_allclose(to_numpy(actual), expected, atol=1e-5)


def test_per_head_attention_mask_reaches_each_head():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    x = random(1, 4, 8)
    mask = np.ones((1, 2, 4, 4), bool)
    mask[0, 1, :, 2:] = False  # head 1 sees keys 0 and 1 only
    _, scores = layer(x, x, attention_mask=mask, return_attention_scores=True)
    scores = to_numpy(scores)
    assert np.all(scores[0, 1, :, 2:] == 0.0)
    assert np.all(scores[0, 0] > 0.0)
    fused = layer(x, x, attention_mask=mask)
    explicit, _ = layer(x, x, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(fused), to_numpy(explicit), atol=1e-5)


@pytest.mark.parametrize(
    "shape", [(3, 5, 5), (2, 3, 5, 5), (5, 4), (2, 2, 2, 5, 5), (5,)]
)
def test_mask_that_cannot_broadcast_names_both_shapes(shape):
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    x = random(2, 5, 8)
    pattern = (
        r"`attention_mask`.*\(2, 2, 5, 5\).*Received: attention_mask with "
        + re_shape(shape)
    )
    with pytest.raises(ValueError, match=pattern):
        layer(x, x, attention_mask=np.ones(shape, bool))


def re_shape(shape):
    return "shape " + str(tuple(shape)).replace("(", r"\(").replace(")", r"\)")


def test_seed_generator_only_with_dropout():
    x = random(2, 5, 8)
    plain = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    plain(x, x)
    dropped = layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.2)
    dropped(x, x)
    assert len(plain.non_trainable_variables) == 0
    assert plain.seed_generator is None
    assert len(dropped.non_trainable_variables) == 1  # the seed state


def test_sublayer_names_and_paths_are_keras_ones():
    ours = layers.MultiHeadAttention(2, 4, use_gate=True, name="mha")
    theirs = keras.layers.MultiHeadAttention(2, 4, use_gate=True, name="mha")
    x = random(2, 5, 8)
    ours(x, x)
    theirs(x, x)
    assert [v.path for v in ours.weights] == [v.path for v in theirs.weights]
    assert ours.query_dense.name == "query"
    assert ours.output_dense.name == "attention_output"


def weights_model(mha_cls, **kwargs):
    query = keras.Input((5, 8), name="query")
    value = keras.Input((7, 6), name="value")
    outputs = mha_cls(num_heads=2, key_dim=4, name="mha", **kwargs)(
        query, value
    )
    return keras.Model({"query": query, "value": value}, outputs)


@pytest.mark.parametrize(
    "kwargs",
    # value_dim != key_dim is left out: Keras's own layer fails on jax then
    # (its fused call needs equal widths); set_weights tests cover it above.
    [{}, {"use_gate": True, "output_shape": 10}],
    ids=["plain", "gated"],
)
def test_weight_files_interchange_with_keras_both_ways(tmp_path, kwargs):
    inputs = {"query": random(3, 5, 8), "value": random(3, 7, 6)}
    theirs = weights_model(keras.layers.MultiHeadAttention, **kwargs)
    ours = weights_model(layers.MultiHeadAttention, **kwargs)
    # Keras's file into ours.
    path = str(tmp_path / "theirs.weights.h5")
    theirs.save_weights(path)
    ours.load_weights(path)
    expected = to_numpy(theirs(inputs))
    np.testing.assert_allclose(to_numpy(ours(inputs)), expected, atol=1e-5)
    # Our file into a fresh Keras model.
    path = str(tmp_path / "ours.weights.h5")
    ours.save_weights(path)
    fresh = weights_model(keras.layers.MultiHeadAttention, **kwargs)
    fresh.load_weights(path)
    np.testing.assert_allclose(to_numpy(fresh(inputs)), expected, atol=1e-5)


def test_dtype_policy_map_keyed_by_keras_paths_applies():
    policy_map = keras.dtype_policies.DTypePolicyMap()
    policy_map["mha/query"] = keras.dtype_policies.DTypePolicy("bfloat16")
    policy_map["mha/attention_output"] = keras.dtype_policies.DTypePolicy(
        "float16"
    )
    layer = layers.MultiHeadAttention(2, 4, dtype=policy_map, name="mha")
    layer.build((2, 5, 8), (2, 5, 8))
    assert layer.query_dense.kernel.dtype == "bfloat16"
    assert layer.output_dense.kernel.dtype == "float16"
    assert layer.key_dense.kernel.dtype == "float32"


def test_int8_quantization_runs_in_a_model():
    inputs = {"query": random(3, 5, 8), "value": random(3, 7, 6)}
    model = weights_model(layers.MultiHeadAttention)
    before = to_numpy(model(inputs))
    model.quantize("int8")
    mha = model.get_layer("mha")
    for dense in (mha.query_dense, mha.key_dense, mha.value_dense):
        assert dense.quantization_mode == "int8"
    after = to_numpy(model(inputs))
    assert np.mean((after - before) ** 2) < 1e-2


@pytest.mark.parametrize(
    "shape, axes",
    [((2, 3, 5, 8), None), ((2, 3, 5, 8), 2), ((2, 4, 3, 2, 8), (2, 3))],
    ids=["4d-joint", "4d-axis2", "5d-axes23"],
)
def test_high_rank_inputs_match_keras(shape, axes):
    query, value = random(*shape), random(*shape)
    theirs = keras.layers.MultiHeadAttention(2, 4, attention_axes=axes)
    ours = layers.MultiHeadAttention(2, 4, attention_axes=axes)
    theirs.build(query.shape, value.shape)
    ours.build(query.shape, value.shape)
    ours.set_weights(theirs.get_weights())
    expected, expected_scores = theirs(
        query, value, return_attention_scores=True
    )
    actual, scores = ours(query, value, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), atol=1e-5)
    np.testing.assert_allclose(
        to_numpy(scores), to_numpy(expected_scores), atol=1e-5
    )
    fused = ours(query, value)
    np.testing.assert_allclose(to_numpy(fused), to_numpy(expected), atol=1e-5)
    assert tuple(ours.compute_output_shape(shape, shape)) == shape


def test_high_rank_inputs_with_a_mask_match_keras():
    query, value = random(2, 3, 5, 8), random(2, 3, 4, 8)
    mask = RNG.random((2, 3, 5, 4)) > 0.3
    mask[..., 0] = True  # every row keeps a key (Keras averages empty rows)
    theirs = keras.layers.MultiHeadAttention(2, 4, attention_axes=2)
    ours = layers.MultiHeadAttention(2, 4, attention_axes=2)
    theirs.build(query.shape, value.shape)
    ours.build(query.shape, value.shape)
    ours.set_weights(theirs.get_weights())
    expected = theirs(query, value, attention_mask=mask)
    actual = ours(query, value, attention_mask=mask)
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), atol=1e-5)


def test_high_rank_inputs_refuse_per_sequence_masks():
    layer = layers.MultiHeadAttention(2, 4)
    x = random(2, 3, 5, 8)
    with pytest.raises(ValueError, match="`value_mask`.*attention_mask"):
        layer(x, x, value_mask=np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="`use_causal_mask`"):
        layer(x, x, use_causal_mask=True)


def test_compute_attention_override_is_called():
    calls = []

    class Recorded(layers.MultiHeadAttention):
        def _compute_attention(
            self,
            query,
            key,
            value,
            attention_mask=None,
            training=None,
            return_attention_scores=False,
        ):
            calls.append(tuple(query.shape))
            return super()._compute_attention(
                query,
                key,
                value,
                attention_mask,
                training,
                return_attention_scores,
            )

    layer = Recorded(num_heads=2, key_dim=4)
    x = random(2, 5, 8)
    causal = layer(x, x, use_causal_mask=True)
    assert calls == [(2, 5, 2, 4)]
    expected = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    expected.build(x.shape, x.shape)
    expected.set_weights(layer.get_weights())
    np.testing.assert_allclose(
        to_numpy(causal),
        to_numpy(expected(x, x, use_causal_mask=True)),
        atol=1e-5,
    )


def test_flash_attention_refuses_scores_on_every_backend():
    layer = layers.MultiHeadAttention(2, 4, flash_attention=True)
    x = random(2, 4, 8)
    with pytest.raises(ValueError, match="return_attention_scores=True"):
        layer(x, x, return_attention_scores=True)


def test_float16_fused_path_decision():
    from keras_attention.ops.attention import device_platform
    from keras_attention.ops.attention import fused_float16_is_safe

    assert fused_float16_is_safe("jax", "gpu")
    assert fused_float16_is_safe("torch", "cuda")
    for backend in ("tensorflow", "jax", "torch"):
        assert not fused_float16_is_safe(backend, "cpu")
    assert not fused_float16_is_safe("tensorflow", "gpu")
    # On this machine: the explicit path, float32 logits, finite outputs
    # where float16 logits would overflow (inputs ~1e4 -> logits ~1e8).
    x = ops.convert_to_tensor(random(1, 4, 2, 8) * 1e2, "float16")
    platform = device_platform(x)
    assert not fused_float16_is_safe(keras.backend.backend(), platform)
    from keras_attention.ops import scaled_dot_product_attention

    out = scaled_dot_product_attention(x, x, x)
    assert np.all(np.isfinite(to_numpy(out).astype("float32")))
