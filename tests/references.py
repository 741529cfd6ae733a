"""Float64 NumPy references shared by the tests of several layers and ops.

Every backend is held to these same oracles. A reference used by one test
file only stays in that file.
"""

import numpy as np
from keras import ops


def to_numpy(x):
    """A tensor as a float64 NumPy array (bfloat16 included)."""
    return np.asarray(ops.convert_to_numpy(ops.cast(x, "float32")), "float64")


def lengths_mask(lengths, length):
    """Boolean `(B, length)`, `True` at the first `lengths[b]` positions."""
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def numpy_masked_softmax(logits, mask, axis=-1):
    """Softmax over `axis` with masked positions at zero; a fully masked
    row is all zeros."""
    logits = np.where(mask, np.float64(logits), -np.inf)
    peak = np.max(logits, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    exp = np.where(mask, np.exp(logits - peak), 0.0)
    total = exp.sum(axis, keepdims=True)
    return np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)


def numpy_scaled_dot_product_attention(query, key, value, mask):
    """`(B, T, N, H)` queries against `(B, S, N, H)` keys; mask `(B, T, S)`.

    Returns `(outputs (B, T, N, H), weights (B, N, T, S))`.
    """
    logits = np.einsum("btnh,bsnh->bnts", query, key) / np.sqrt(query.shape[-1])
    mask = np.broadcast_to(mask[:, None], logits.shape)
    weights = numpy_masked_softmax(logits, mask)
    return np.einsum("bnts,bsnh->btnh", weights, value), weights


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
    attended, _ = numpy_scaled_dot_product_attention(q, k, v, mask)
    return np.einsum("btnh,nhf->btf", attended, wo) + bo


def numpy_feedforward(x, w1, b1, w2, b2):
    return np.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def numpy_residual(x, fn, gamma, beta, norm_first):
    """One Transformer sublayer: pre-norm or post-norm residual."""
    if norm_first:
        return x + fn(numpy_layer_norm(x, gamma, beta))
    return numpy_layer_norm(x + fn(x), gamma, beta)
