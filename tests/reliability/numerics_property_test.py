"""Property-based numerics of every attention layer and op (hypothesis).

For random batch sizes (1-3), per-row lengths (0-6: a length of 0 is a fully
masked row, 1 a one-token sequence), input magnitudes up to 1e4 and the
dtypes float32, float16 and bfloat16, every example checks:

- every output (and every returned weight) is finite;
- padding content never leaks: the real tokens' outputs are the same when
  the padded positions hold different values (inputs of size up to 1e4);
- appending padding never changes the real tokens' outputs (the same batch
  padded from 6 to 8 positions and to 3 rows);

Both comparisons allow the dtype's rounding (`RTOL`): tensorflow's oneDNN
kernels round a row differently by its position in the batch (1 ulp), and
different shapes may round differently. A leak of padding would show up at
the size of the padded values, far above it.
- returned attention weights are exactly zero at masked keys.

Each layer is built once per dtype with fixed widths and reused: the shapes
seen are only (batch 2-6, length 6) and (batch 3, length 8), which keeps
jax's per-shape compilation cheap. `derandomize=True` makes hypothesis draw
the same
examples on every run, so CI is deterministic.
"""

import collections

import keras
import numpy as np
import pytest
from hypothesis import HealthCheck
from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops as kops

from keras_attention import layers
from keras_attention import ops
from keras_attention.testing.threads import single_torch_thread

MAX_BATCH, LENGTH, APPENDED, FEATURES = 3, 6, 2, 8
DTYPES = ("float32", "float16", "bfloat16")
# Relative tolerance of the padding comparisons (times the largest output).
RTOL = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 6e-2}
EXAMPLES = int(__import__("os").environ.get("NUMERICS_EXAMPLES", 200))

_LAYERS = {}


def to_numpy(x):
    return np.asarray(kops.convert_to_numpy(kops.cast(x, "float32")))


# Each spec: make(dtype) -> layer (or None for an op); run(layer, x, mask,
# dtype) -> (outputs, [weights, ...]) with keras ops only (on jax it runs
# under `jax.jit`); zeros(mask, weights) -> one boolean array per weight,
# broadcastable to it, True where the weight must be exactly 0. Outputs are
# per token (B, T, F) or pooled (B, F).


def masked_keys(mask, weights):
    """True at masked keys (the last axis of every weight)."""
    zeros = []
    for w in weights:
        zero = ~mask  # (B, S)
        zero = zero.reshape(
            zero.shape[:1] + (1,) * (w.ndim - 2) + zero.shape[1:]
        )
        zeros.append(zero)
    return zeros


def run_mha(layer, x, mask, dtype):
    out, weights = layer(
        x, x, query_mask=mask, value_mask=mask, return_attention_scores=True
    )
    return out, [weights]  # (B, N, T, S)


def run_disa(layer, x, mask, dtype):
    out, weights = layer(x, mask=mask, return_attention_scores=True)
    return out, [weights]  # (B, T, S, F)


def disa_zeros(mask, weights):
    return [~mask[:, None, :, None]]


def run_source2token(layer, x, mask, dtype):
    return layer(x, mask=mask), []


def run_resa(layer, x, mask, dtype):
    out, weights = layer(x, mask=mask, return_attention_scores=True)
    return out, [weights]


def resa_zeros(mask, weights):
    zero = ~mask[:, None, :]  # (B, 1, S)
    return [zero[..., None] if weights[0].ndim == 4 else zero]


def run_soft_alignment(layer, x, mask, dtype):
    # The hypothesis is the premise reversed, with its own mask.
    h, h_mask = kops.flip(x, 1), kops.flip(mask, 1)
    beta, alpha, premise_weights, hypothesis_weights = layer(
        x,
        h,
        premise_mask=mask,
        hypothesis_mask=h_mask,
        return_attention_scores=True,
    )
    out = kops.concatenate(
        [kops.cast(beta, "float32"), kops.cast(kops.flip(alpha, 1), "float32")],
        -1,
    )
    return out, [premise_weights, hypothesis_weights]


def soft_alignment_zeros(mask, weights):
    # premise weights (B, T, S) over hypothesis tokens; hypothesis weights
    # (B, S, T) over premise tokens.
    return [~mask[:, None, ::-1], ~mask[:, None, :]]


def run_intra(layer, x, mask, dtype):
    out, weights = layer(x, mask=mask, return_attention_scores=True)
    return out, [weights]  # (B, T, T)


def run_encoder_block(layer, x, mask, dtype):
    out, weights = layer(x, padding_mask=mask, return_attention_scores=True)
    return out, [weights]  # (B, N, T, T)


def run_decoder_block(layer, x, mask, dtype):
    memory, memory_mask = kops.flip(x, 1), kops.flip(mask, 1)
    out = layer(x, memory, padding_mask=mask, encoder_padding_mask=memory_mask)
    return out, []


def run_masked_softmax(layer, x, mask, dtype):
    # Additive scores of the inputs' size, kept inside float16's range.
    logits = (x[:, :, None, 0] - x[:, None, :, 1]) / 2.0
    logits = kops.cast(kops.clip(logits, -6e4, 6e4), dtype)
    pair = kops.logical_and(mask[:, :, None], mask[:, None, :])
    weights = ops.masked_softmax(logits, pair, axis=-1)
    # Per-token "output": each query's weighted sum of the inputs.
    out = kops.einsum("bts,bsf->btf", kops.cast(weights, "float32"), x)
    return out, [weights]  # (B, T, S)


def run_sdpa(layer, x, mask, dtype):
    b, t = x.shape[0], x.shape[1]
    heads = kops.cast(kops.reshape(x, (b, t, 2, FEATURES // 2)), dtype)
    pair = kops.logical_and(mask[:, :, None], mask[:, None, :])
    out, weights = ops.scaled_dot_product_attention(
        heads, heads, heads, mask=pair, return_attention_scores=True
    )
    fused = ops.scaled_dot_product_attention(heads, heads, heads, mask=pair)
    out = kops.concatenate(
        [kops.reshape(out, (b, t, -1)), kops.reshape(fused, (b, t, -1))], -1
    )
    return out, [weights]  # (B, N, T, S)


SPECS = {
    "MultiHeadAttention": (
        lambda dtype: layers.MultiHeadAttention(2, 4, dtype=dtype),
        run_mha,
        masked_keys,
    ),
    "DirectionalSelfAttention": (
        lambda dtype: layers.DirectionalSelfAttention(dtype=dtype),
        run_disa,
        disa_zeros,
    ),
    "Source2TokenAttention": (
        lambda dtype: layers.Source2TokenAttention(dtype=dtype),
        run_source2token,
        masked_keys,
    ),
    "ReinforcedSelfAttention": (
        lambda dtype: layers.ReinforcedSelfAttention(seed=1, dtype=dtype),
        run_resa,
        resa_zeros,
    ),
    "SoftAlignment": (
        lambda dtype: layers.SoftAlignment(hidden_dim=8, dtype=dtype),
        run_soft_alignment,
        soft_alignment_zeros,
    ),
    "IntraSentenceAttention": (
        lambda dtype: layers.IntraSentenceAttention(hidden_dim=8, dtype=dtype),
        run_intra,
        masked_keys,
    ),
    "TransformerEncoderBlock": (
        lambda dtype: layers.TransformerEncoderBlock(
            num_heads=2, intermediate_dim=16, dtype=dtype
        ),
        run_encoder_block,
        masked_keys,
    ),
    "TransformerDecoderBlock": (
        lambda dtype: layers.TransformerDecoderBlock(
            num_heads=2, intermediate_dim=16, dtype=dtype
        ),
        run_decoder_block,
        masked_keys,
    ),
    "masked_softmax": (None, run_masked_softmax, masked_keys),
    "scaled_dot_product_attention": (None, run_sdpa, masked_keys),
}


def compiled(name, dtype):
    """The spec's run function on the layer built once for `dtype`.

    On jax it is wrapped in `jax.jit` (one compilation per input shape;
    jax's op-by-op mode compiles every op for every shape, which is much
    slower here) and on tensorflow in `tf.function` (one trace per shape,
    far less per-call overhead than eager). torch runs eagerly.
    """
    key = (name, dtype)
    if key not in _LAYERS:
        make, run, _ = SPECS[name]
        layer = None if make is None else make(dtype)

        def call(x, mask):
            return run(layer, x, mask, dtype)

        # Build the weights eagerly (never inside a jax trace).
        call(
            np.zeros((1, LENGTH, FEATURES), "float32"),
            np.ones((1, LENGTH), bool),
        )
        if keras.backend.backend() == "jax":
            import jax

            call = jax.jit(call)
        elif keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            call = tf.function(call)
        _LAYERS[key] = call
    return _LAYERS[key]


def make_inputs(seed, batch, lengths, magnitude):
    """Inputs (3, 6 + 2, F): real tokens, then two kinds of padding.

    Rows past `batch` are padding rows (fully masked).
    """
    rng = np.random.default_rng(seed)
    total = LENGTH + APPENDED
    x = rng.normal(size=(MAX_BATCH, total, FEATURES)) * magnitude
    other = rng.normal(size=(MAX_BATCH, total, FEATURES)) * magnitude
    lengths = np.asarray(lengths[:batch] + [0] * (MAX_BATCH - batch))
    mask = np.arange(total)[None, :] < lengths[:, None]
    return x.astype("float32"), other.astype("float32"), mask


def real_rows(name, out, mask):
    """The outputs that padding must not change, as float32 numpy."""
    out = to_numpy(out)
    if out.ndim == 2:  # pooled (B, F): every row
        return out
    return np.where(mask[..., None], out, 0.0)


def check_example(name, dtype, seed, batch, lengths, magnitude):
    call = compiled(name, dtype)
    x, other, full_mask = make_inputs(seed, batch, lengths, magnitude)
    mask = full_mask[:batch, :LENGTH]
    base = x[:batch, :LENGTH]
    # Same real tokens, different padding content.
    swapped = np.where(mask[..., None], base, other[:batch, :LENGTH])
    # Padding appended: two more positions, and padding rows up to a batch
    # of 3 (one shape per dtype, which keeps compilations few).
    appended = np.where(full_mask[..., None], x, other)

    # The base and swapped inputs go through in one call, stacked on the
    # batch axis (rows are independent).
    out, weights = call(
        np.concatenate([base, swapped]), np.concatenate([mask, mask])
    )
    out, out_swapped = to_numpy(out)[:batch], to_numpy(out)[batch:]
    weights = [to_numpy(w)[:batch] for w in weights]
    out_appended, _ = call(appended, full_mask)

    for value in [out, out_swapped, out_appended] + weights:
        assert np.isfinite(to_numpy(value)).all(), f"{name} {dtype}"
    for w, zero in zip(weights, SPECS[name][2](mask, weights)):
        zero = np.broadcast_to(zero, w.shape)
        assert (w[zero] == 0.0).all(), f"{name} {dtype}: masked weight != 0"

    real = real_rows(name, out, mask)
    scale = max(1.0, float(np.abs(real).max()))
    np.testing.assert_allclose(
        real_rows(name, out_swapped, mask),
        real,
        rtol=RTOL[dtype],
        atol=RTOL[dtype] * scale,
    )
    appended_real = to_numpy(out_appended)
    if appended_real.ndim == 3:
        appended_real = np.where(full_mask[..., None], appended_real, 0.0)
        appended_real = appended_real[:, :LENGTH]
    appended_real = appended_real[:batch]
    np.testing.assert_allclose(
        appended_real, real, rtol=RTOL[dtype], atol=RTOL[dtype] * scale
    )


@pytest.fixture(autouse=True)
def one_torch_thread():
    """torch on one intra-op thread: many tiny ops run much faster so."""
    with single_torch_thread():
        yield


@pytest.mark.parametrize("name", sorted(SPECS))
def test_attention_is_finite_padding_invariant_and_masks_exactly(name):
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(
        dtype=st.sampled_from(DTYPES),
        seed=st.integers(0, 2**32 - 1),
        batch=st.integers(1, MAX_BATCH),
        lengths=st.lists(
            st.integers(0, LENGTH), min_size=MAX_BATCH, max_size=MAX_BATCH
        ),
        magnitude=st.one_of(st.just(1e4), st.floats(1e-3, 1e4)),
    )
    # Always tried, on top of the drawn examples: fully masked rows next to
    # one-token rows at the largest magnitude, in every dtype.
    @example(dtype="float32", seed=0, batch=3, lengths=[0, 1, 6], magnitude=1e4)
    @example(dtype="float16", seed=1, batch=3, lengths=[1, 0, 6], magnitude=1e4)
    @example(
        dtype="bfloat16", seed=2, batch=2, lengths=[0, 1, 0], magnitude=1e4
    )
    def check(dtype, seed, batch, lengths, magnitude):
        check_example(name, dtype, seed, batch, lengths, magnitude)
        runs.append(dtype)

    runs = []
    check()
    # 200 drawn examples and the 3 explicit ones, each dtype many times.
    assert len(runs) >= EXAMPLES + 3, len(runs)
    assert min(runs.count(dtype) for dtype in DTYPES) >= EXAMPLES // 10
    print(f"{name}: {len(runs)} examples {collections.Counter(runs)}")
