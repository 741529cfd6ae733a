import keras
import numpy as np
import pytest
from keras import ops
from references import numpy_masked_softmax

from keras_attention import ops as ka_ops


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(ops.cast(x, "float32")))


def test_matches_numpy_reference():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4, 5)).astype("float32")
    mask = rng.random((3, 4, 5)) > 0.4
    mask[0, 0] = False
    actual = to_numpy(ka_ops.masked_softmax(logits, mask))
    np.testing.assert_allclose(
        actual, numpy_masked_softmax(logits, mask), atol=1e-6
    )


def test_without_mask_is_plain_softmax():
    logits = np.array([[1.0, 2.0, 3.0]], "float32")
    expected = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(
        to_numpy(ka_ops.masked_softmax(logits)), expected, atol=1e-6
    )


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_masked_positions_get_exactly_zero_and_rows_stay_finite(dtype):
    logits = ops.cast(
        np.array([[6e4, -6e4, 1.0], [3.0, 2.0, 1.0], [0.0, 0.0, 0.0]]), dtype
    )
    mask = np.array(
        [[True, False, True], [False, False, False], [False, True, False]]
    )
    weights = to_numpy(ka_ops.masked_softmax(logits, mask))
    assert np.all(np.isfinite(weights))
    assert np.all(weights[~mask] == 0.0)
    np.testing.assert_array_equal(weights[1], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(weights[[0, 2]].sum(-1), [1.0, 1.0], atol=1e-2)


def test_half_precision_logits_keep_their_dtype():
    logits = ops.cast(np.zeros((2, 3)), "float16")
    out = ka_ops.masked_softmax(logits, np.ones((2, 3), bool))
    assert ops.dtype(out) == "float16"


def test_large_negative_is_finite_for_each_dtype():
    assert ka_ops.large_negative("float16") == -65504.0
    assert np.isfinite(ka_ops.large_negative("bfloat16"))
    assert ka_ops.large_negative("float32") < -1e38


def test_causal_mask_with_offset():
    mask = to_numpy(ka_ops.causal_mask(2, 5, offset=2)).astype(bool)
    expected = np.array(
        [[True, True, True, False, False], [True, True, True, True, False]]
    )
    np.testing.assert_array_equal(mask, expected)


def test_local_mask_keeps_distance_up_to_window():
    mask = to_numpy(ka_ops.local_mask(5, 5, window_size=1)).astype(bool)
    distance = np.abs(np.arange(5)[:, None] - np.arange(5)[None, :])
    np.testing.assert_array_equal(mask, distance <= 1)


def test_pairwise_and_merge_masks():
    query = np.array([[True, False]])
    key = np.array([[True, True, False]])
    pair = to_numpy(ka_ops.pairwise_mask(query, key)).astype(bool)
    np.testing.assert_array_equal(pair, query[:, :, None] & key[:, None, :])
    assert ka_ops.pairwise_mask(None, None) is None
    assert ka_ops.merge_masks(None, None) is None
    merged = ka_ops.merge_masks(pair, None, np.array([[[True, False, True]]]))
    np.testing.assert_array_equal(
        to_numpy(merged).astype(bool), [[[True, False, False], [False] * 3]]
    )


@pytest.mark.parametrize("keepdims", [False, True])
def test_masked_sum_and_mean_match_numpy(keepdims):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]]) > 0
    kept = np.where(mask[..., None], np.float64(x), 0.0)
    total = kept.sum(1, keepdims=keepdims)
    shape = (3, 1, 1) if keepdims else (3, 1)
    count = np.maximum(mask.sum(1), 1).reshape(shape)
    np.testing.assert_allclose(
        to_numpy(ka_ops.masked_sum(x, mask, keepdims=keepdims)),
        total,
        atol=1e-5,
    )
    np.testing.assert_allclose(
        to_numpy(ka_ops.masked_mean(x, mask, keepdims=keepdims)),
        total / count,
        atol=1e-5,
    )


def test_masked_mean_of_float16_sums_in_float32():
    # Four tokens of 3e4 sum to 1.2e5, past float16's largest value; their
    # mean, 3e4, is representable.
    x = ops.cast(np.full((1, 4, 2), 3e4, "float32"), "float16")
    mean = ka_ops.masked_mean(x, np.ones((1, 4), bool))
    assert keras.backend.standardize_dtype(mean.dtype) == "float16"
    np.testing.assert_allclose(to_numpy(mean), 3e4, rtol=1e-3)
