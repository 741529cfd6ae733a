import keras
import numpy as np
import pytest
from keras import ops
from references import numpy_scaled_dot_product_attention

from keras_attention import ops as ka_ops

RNG = np.random.default_rng(3)


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.mark.parametrize("value_width", [4, 3])
def test_fused_and_explicit_paths_match_numpy(value_width):
    query = RNG.normal(size=(2, 5, 2, 4)).astype("float32")
    key = RNG.normal(size=(2, 6, 2, 4)).astype("float32")
    value = RNG.normal(size=(2, 6, 2, value_width)).astype("float32")
    mask = RNG.random((2, 5, 6)) > 0.3
    mask[1, 2] = False  # a query with no key left
    expected, weights = numpy_scaled_dot_product_attention(
        np.float64(query), np.float64(key), np.float64(value), mask
    )
    fused = ka_ops.scaled_dot_product_attention(query, key, value, mask)
    explicit, actual_weights = ka_ops.scaled_dot_product_attention(
        query, key, value, mask, return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(fused), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(explicit), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(actual_weights), weights, atol=1e-6)
    assert np.all(to_numpy(fused)[1, 2] == 0.0)


def test_dropout_only_in_training_and_keeps_masked_weights_zero():
    query = RNG.normal(size=(1, 4, 1, 4)).astype("float32")
    mask = np.tril(np.ones((4, 4), bool))[None]
    seed = keras.random.SeedGenerator(1)
    inference = ka_ops.scaled_dot_product_attention(
        query, query, query, mask, dropout=0.5, training=False, seed=seed
    )
    expected, _ = numpy_scaled_dot_product_attention(
        np.float64(query), np.float64(query), np.float64(query), mask
    )
    np.testing.assert_allclose(to_numpy(inference), expected, atol=1e-5)
    _, weights = ka_ops.scaled_dot_product_attention(
        query,
        query,
        query,
        mask,
        dropout=0.5,
        training=True,
        seed=seed,
        return_attention_scores=True,
    )
    assert np.all(to_numpy(weights)[0, 0][~mask[0]] == 0.0)


def gradient(fn, x):
    """d sum(fn(x)) / dx on the current backend."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(fn(x))
        return tape.gradient(total, x).numpy()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(lambda v: fn(v).sum())(x))
    import torch

    x = torch.tensor(x, requires_grad=True)
    fn(x).sum().backward()
    return x.grad.numpy()


@pytest.mark.parametrize("scores", [False, True])
def test_fully_masked_rows_have_finite_gradients(scores):
    query = RNG.normal(size=(1, 3, 1, 4)).astype("float32")
    mask = np.ones((1, 3, 3), bool)
    mask[0, 1] = False  # the second query sees no key

    def attend(q):
        out = ka_ops.scaled_dot_product_attention(
            q, q, q, mask, return_attention_scores=scores
        )
        return out[0] if scores else out

    assert np.all(to_numpy(attend(query))[0, 1] == 0.0)
    grads = gradient(attend, query)
    assert np.all(np.isfinite(grads))
    assert np.any(grads != 0.0)


@pytest.mark.parametrize("key_length", [5, 7])
@pytest.mark.parametrize("with_mask", [False, True])
def test_is_causal_matches_an_explicit_causal_mask(key_length, with_mask):
    query = RNG.normal(size=(2, 5, 2, 4)).astype("float32")
    key = RNG.normal(size=(2, key_length, 2, 4)).astype("float32")
    padding = np.ones((2, 5, key_length), bool)
    if with_mask:
        padding[1, :, 3:] = False
    causal = np.tril(np.ones((5, key_length), bool))[None]
    expected, weights = numpy_scaled_dot_product_attention(
        np.float64(query), np.float64(key), np.float64(key), padding & causal
    )
    mask = padding if with_mask else None
    fused = ka_ops.scaled_dot_product_attention(
        query, key, key, mask, is_causal=True
    )
    explicit, actual_weights = ka_ops.scaled_dot_product_attention(
        query, key, key, mask, is_causal=True, return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(fused), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(explicit), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(actual_weights), weights, atol=1e-6)


@pytest.mark.parametrize("per_head", [False, True])
def test_single_query_attention_matches_numpy(per_head):
    query = RNG.normal(size=(3, 1, 2, 4)).astype("float32")
    key = RNG.normal(size=(3, 6, 2, 4)).astype("float32")
    value = RNG.normal(size=(3, 6, 2, 3)).astype("float32")
    mask = RNG.random((3, 2, 1, 6)) > 0.3
    mask[:, :, :, 0] = True
    mask[2] = False  # a query with no key left
    if not per_head:
        mask = mask[:, :1]
    expected = np.zeros((3, 1, 2, 3))
    for head in range(2):
        head_mask = mask[:, min(head, mask.shape[1] - 1)]  # (B, 1, S)
        out, _ = numpy_scaled_dot_product_attention(
            np.float64(query[:, :, head : head + 1]),
            np.float64(key[:, :, head : head + 1]),
            np.float64(value[:, :, head : head + 1]),
            head_mask,
        )
        expected[:, :, head : head + 1] = out
    actual = to_numpy(ka_ops.single_query_attention(query, key, value, mask))
    np.testing.assert_allclose(actual, expected, atol=1e-5)
    assert np.all(actual[2] == 0.0)
    # The batched products give the same values.
    batched = ka_ops.scaled_dot_product_attention(query, key, value, mask)
    np.testing.assert_allclose(actual, to_numpy(batched), atol=1e-5)
    # So do keys and values kept heads first, (B, N, S, H).
    heads_first = ka_ops.single_query_attention(
        query,
        np.swapaxes(key, 1, 2),
        np.swapaxes(value, 1, 2),
        mask,
        heads_first=True,
    )
    assert tuple(heads_first.shape) == (3, 1, 2, 3)
    np.testing.assert_allclose(to_numpy(heads_first), expected, atol=1e-5)
    assert np.all(to_numpy(heads_first)[2] == 0.0)


def test_single_query_attention_keeps_half_precision_finite():
    # Logits of ~1e5 overflow float16; they are computed in float32.
    query = np.full((1, 1, 1, 8), 120.0, "float16")
    key = np.full((1, 4, 1, 8), 120.0, "float16")
    value = RNG.normal(size=(1, 4, 1, 8)).astype("float16")
    for heads_first in (False, True):
        output = ka_ops.single_query_attention(
            query,
            np.swapaxes(key, 1, 2) if heads_first else key,
            np.swapaxes(value, 1, 2) if heads_first else value,
            heads_first=heads_first,
        )
        assert ops.dtype(output) == "float16"
        np.testing.assert_allclose(
            to_numpy(output)[0, 0],
            np.float32(value).mean(1)[0],
            atol=1e-2,
        )


def test_single_query_attention_refuses_several_queries():
    query = np.zeros((2, 3, 2, 4), "float32")
    key = np.zeros((2, 5, 2, 4), "float32")
    with pytest.raises(ValueError, match=r"query with shape \(2, 3, 2, 4\)"):
        ka_ops.single_query_attention(query, key, key)
