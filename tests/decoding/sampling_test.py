import keras
import numpy as np
import pytest
from keras import ops
from scipy import stats

from keras_attention import decoding
from keras_attention.decoding.sampling import nucleus_threshold
from keras_attention.decoding.sampling import nucleus_threshold_by_sorting
from keras_attention.decoding.sampling import sampling_probabilities
from keras_attention.models import TransformerLanguageModel

START, END = 1, 2
LOGITS = np.array([-50.0, 0.3, -40.0, 1.2, 0.0, 2.0, -0.5, 0.8, 1.5], "float32")
DRAWS = 4000


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


class FixedLogitsModel:
    """A decoder-only "model" whose next-token logits never change."""

    variables = []
    max_sequence_length = 8

    def initial_cache(self, batch_size, max_length):
        return ops.zeros((batch_size, 1))

    def decode_step(self, token_ids, index, self_attention_cache):
        rows = ops.ones(ops.shape(token_ids) + (1,)) * LOGITS
        return rows, self_attention_cache

    def decode(self, token_ids):
        return ops.ones(ops.shape(token_ids) + (1,)) * LOGITS


def first_tokens(**kwargs):
    """`DRAWS` draws of the first token after a one-token prompt."""
    prompts = np.full((DRAWS, 1), 4, "int32")
    tokens = decoding.sample(
        FixedLogitsModel(), prompts, START, END, max_extra_length=2, **kwargs
    )
    return to_numpy(tokens)[:, 0]


def reference(temperature=1.0, top_k=None, top_p=None):
    """Float64 NumPy: the truncated, renormalised distribution."""
    logits = np.float64(LOGITS).copy()
    logits[0] = -np.inf  # padding is never drawn
    logits = logits / temperature
    if top_k is not None:
        kth = np.sort(logits)[::-1][top_k - 1]
        logits = np.where(logits >= kth, logits, -np.inf)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    if top_p is not None:
        order = np.argsort(-probs)
        before = np.cumsum(probs[order]) - probs[order]
        kept = order[before < top_p]
        probs = np.where(np.isin(np.arange(len(probs)), kept), probs, 0.0)
        probs /= probs.sum()
    return probs


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(top_k=3),
        dict(top_p=0.7),
        dict(top_k=5, top_p=0.9, temperature=1.5),
        dict(temperature=0.7),
    ],
    ids=["top_k", "top_p", "combined", "temperature"],
)
def test_empirical_frequencies_match_the_truncated_distribution(kwargs):
    expected = reference(**kwargs)
    tokens = first_tokens(seed=11, **kwargs)
    counts = np.bincount(tokens, minlength=len(LOGITS))
    # Tokens outside the truncated set are never drawn.
    assert counts[expected == 0].sum() == 0
    support = expected > 0
    _, p_value = stats.chisquare(counts[support], DRAWS * expected[support])
    assert p_value > 1e-3, (counts, DRAWS * expected)


def test_sampling_probabilities_equal_the_numpy_reference():
    log_probs = ops.convert_to_tensor(LOGITS[None, 1:])
    for kwargs in (dict(top_k=3), dict(top_p=0.7), dict(temperature=2.0)):
        got = to_numpy(sampling_probabilities(log_probs, **kwargs))[0]
        np.testing.assert_allclose(
            got, reference_without_padding(**kwargs), atol=1e-6
        )


def test_nucleus_threshold_without_sorting_keeps_the_sorted_nucleus():
    # The binary search over the probabilities' bits keeps the tokens that
    # sorting keeps; only where the nucleus mass meets top_p within float
    # rounding may one token more or fewer stay.
    rng = np.random.default_rng(3)
    rows = 0
    for scale in (0.5, 2.0, 5.0):
        logits = rng.normal(size=(64, 2000)) * scale
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs = (probs / probs.sum(-1, keepdims=True)).astype("float32")
        for top_p in (0.1, 0.5, 0.9, 0.99):
            kept = [
                (probs >= to_numpy(threshold(probs, top_p))).sum(-1)
                for threshold in (
                    nucleus_threshold,
                    nucleus_threshold_by_sorting,
                )
            ]
            assert np.abs(kept[0] - kept[1]).max() <= 1
            rows += int((kept[0] != kept[1]).sum())
    assert rows <= 0.02 * 64 * 12
    # Ties all stay; a one-hot row keeps its token.
    ties = np.zeros((3, 10), "float32")
    ties[0, 3], ties[1, :4], ties[2] = 1.0, 0.25, 0.1
    for threshold in (nucleus_threshold, nucleus_threshold_by_sorting):
        np.testing.assert_array_equal(
            to_numpy(threshold(ties, 0.5))[:, 0], ties.max(-1)
        )


def reference_without_padding(**kwargs):
    # The same distribution over ids 1..V-1 (LOGITS without padding).
    probs = reference(**kwargs)[1:]
    return probs / probs.sum()


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(5)
    return TransformerLanguageModel(
        vocabulary_size=29,
        num_layers=1,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=16,
    )


PROMPTS = np.array([[5, 6, 7], [8, 9, 0]], "int32")


def test_the_same_seed_gives_the_same_tokens(model):
    kwargs = dict(top_k=10, top_p=0.95, max_extra_length=8)
    first = to_numpy(
        decoding.sample(model, PROMPTS, START, END, seed=3, **kwargs)
    )
    again = to_numpy(
        decoding.sample(model, PROMPTS, START, END, seed=3, **kwargs)
    )
    np.testing.assert_array_equal(first, again)
    others = [
        to_numpy(decoding.sample(model, PROMPTS, START, END, seed=s, **kwargs))
        for s in (4, 5, 6)
    ]
    assert any(not np.array_equal(first, other) for other in others)
    if keras.backend.backend() == "tensorflow":
        # Compiled with XLA: the same draws, the same tokens.
        compiled = decoding.sample(
            model, PROMPTS, START, END, seed=3, jit_compile=True, **kwargs
        )
        np.testing.assert_array_equal(to_numpy(compiled), first)


def test_temperature_to_zero_is_greedy(model):
    greedy = to_numpy(
        decoding.greedy_search(model, PROMPTS, START, END, max_extra_length=8)
    )
    for temperature in (0, 1e-4):
        sampled = decoding.sample(
            model,
            PROMPTS,
            START,
            END,
            temperature=temperature,
            seed=1,
            max_extra_length=8,
        )
        np.testing.assert_array_equal(to_numpy(sampled), greedy)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(temperature=-1.0), "temperature=-1.0"),
        (dict(top_k=0), "top_k=0"),
        (dict(top_p=1.5), "top_p=1.5"),
    ],
)
def test_bad_sampling_arguments_name_the_value(model, kwargs, message):
    with pytest.raises(ValueError, match=message):
        decoding.sample(model, PROMPTS, START, END, **kwargs)
