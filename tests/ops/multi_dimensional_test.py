import numpy as np
import pytest
from keras import ops

from keras_attention.ops import directional_mask
from keras_attention.ops import multi_dimensional_attention

RNG = np.random.default_rng(3)


def numpy_multi_dimensional_attention(query, key, value, mask, c=5.0):
    """Float64 reference; mask (B, T, S) boolean or None."""
    logits = c * np.tanh((query[:, :, None] + key[:, None]) / c)
    if mask is None:
        mask = np.ones(logits.shape[:3], bool)
    mask = mask[..., None]
    exp = np.where(mask, np.exp(logits - logits.max(2, keepdims=True)), 0.0)
    total = exp.sum(2, keepdims=True)
    weights = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    return (weights * value[:, None]).sum(2), weights


def numpy_directional_mask(n, direction):
    t, s = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return {"forward": s < t, "backward": s > t, None: s != t}[direction]


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.mark.parametrize("direction", ["forward", "backward", None])
def test_directional_mask_matches_numpy(direction):
    np.testing.assert_array_equal(
        to_numpy(directional_mask(5, direction=direction)),
        numpy_directional_mask(5, direction),
    )


def test_directional_mask_on_gathered_positions():
    rows = np.array([[0, 3, 4]], "int32")
    cols = np.array([[1, 3]], "int32")
    mask = to_numpy(directional_mask(rows, cols, direction="forward"))
    np.testing.assert_array_equal(mask, [[[0, 0], [1, 0], [1, 1]]])


def test_unknown_direction_is_rejected():
    with pytest.raises(ValueError, match="Received: direction='sideways'"):
        directional_mask(3, direction="sideways")


def test_matches_numpy_reference():
    q, k, v = (RNG.normal(size=(2, 5, 4)) for _ in range(3))
    mask = numpy_directional_mask(5, "forward")[None] & (
        np.arange(5)[None, None] < np.array([5, 3])[:, None, None]
    )
    output, weights = multi_dimensional_attention(
        q.astype("float32"),
        k.astype("float32"),
        v.astype("float32"),
        mask=mask,
        return_attention_scores=True,
    )
    expected, expected_weights = numpy_multi_dimensional_attention(
        q, k, v, mask
    )
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=1e-6)
    # The first token has nothing to attend to under a forward mask.
    np.testing.assert_array_equal(to_numpy(output)[:, 0], 0.0)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fast_path_matches_the_softmax(dtype):
    # Without the weights, the output sums the softmax's numerator and
    # denominator over the keys (no max shift, the scores being bounded);
    # with them, it goes through `masked_softmax`. Fully masked rows (the
    # first under a forward mask, and all of the second example's third
    # query) give zeros both ways; values and gradients agree.
    q, k, v = (
        ops.cast(RNG.normal(size=(2, 6, 5)) * 3, dtype) for _ in range(3)
    )
    mask = numpy_directional_mask(6, "forward")[None] & (
        RNG.random((2, 6, 6)) > 0.2
    )
    mask[1, 2] = False
    fast = multi_dimensional_attention(q, k, v, mask=mask)
    softmax, _ = multi_dimensional_attention(
        q, k, v, mask=mask, return_attention_scores=True
    )
    # bfloat16: about two units in the last place (8 bits of mantissa).
    tolerance = {"atol": 1e-5}
    if dtype == "bfloat16":
        tolerance = {"rtol": 2**-6, "atol": 2e-2}
    fast = to_numpy(ops.cast(fast, "float32"))
    np.testing.assert_allclose(
        fast, to_numpy(ops.cast(softmax, "float32")), **tolerance
    )
    np.testing.assert_array_equal(fast[:, 0], 0.0)
    np.testing.assert_array_equal(fast[1, 2], 0.0)
    expected = numpy_multi_dimensional_attention(
        *(
            to_numpy(ops.cast(x, "float32")).astype("float64")
            for x in (q, k, v)
        ),
        mask,
    )[0]
    np.testing.assert_allclose(fast, expected, **tolerance)


@pytest.mark.parametrize("block_size", [1, 3, 7])
def test_blocked_equals_unblocked(block_size):
    q, k, v = (RNG.normal(size=(2, 7, 3)).astype("float32") for _ in "qkv")
    mask = RNG.random((2, 7, 7)) > 0.3
    full = multi_dimensional_attention(q, k, v, mask=mask)
    blocked = multi_dimensional_attention(
        q, k, v, mask=mask, block_size=block_size
    )
    np.testing.assert_allclose(to_numpy(blocked), to_numpy(full), atol=1e-6)
    unmasked = multi_dimensional_attention(q, k, v, block_size=block_size)
    np.testing.assert_allclose(
        to_numpy(unmasked),
        numpy_multi_dimensional_attention(q, k, v, None)[0],
        atol=1e-5,
    )


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_masked_rows_stay_finite(dtype):
    q = ops.cast(RNG.normal(size=(2, 4, 3)) * 100, dtype)
    mask = np.zeros((2, 4, 4), bool)
    mask[0, 1, 0] = True
    output = ops.cast(
        multi_dimensional_attention(q, q, q, mask=mask), "float32"
    )
    output = to_numpy(output)
    assert np.all(np.isfinite(output))
    assert np.all(output[1] == 0.0)


def test_bad_block_size_is_rejected():
    q = np.zeros((1, 2, 2), "float32")
    with pytest.raises(ValueError, match="Received: block_size=0"):
        multi_dimensional_attention(q, q, q, block_size=0)
    with pytest.raises(ValueError, match="return_attention_scores=True"):
        multi_dimensional_attention(
            q, q, q, block_size=2, return_attention_scores=True
        )
