import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.models import TransformerLanguageModel

START, END = 1, 2
# Prompts of different lengths, right-padded: the shortest sets where the
# loop starts after the prefill.
PROMPTS = np.array(
    [[5, 6, 7, 8, 9, 10], [11, 12, 0, 0, 0, 0], [13, 14, 15, 16, 0, 0]],
    "int32",
)


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.fixture(scope="module", params=[False, True], ids=["post", "pre"])
def model(request):
    keras.utils.set_random_seed(9)
    return TransformerLanguageModel(
        vocabulary_size=31,
        num_layers=2,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=24,
        norm_first=request.param,
    )


@pytest.mark.parametrize(
    "search, kwargs",
    [
        (decoding.greedy_search, {}),
        (decoding.beam_search, {"beam_size": 3, "return_scores": True}),
        (decoding.sample, {"top_k": 8, "seed": 4}),
    ],
    ids=["greedy", "beam", "sample"],
)
def test_prefill_gives_the_token_by_token_continuation(model, search, kwargs):
    outputs = {}
    for prefill in (True, False):
        result = search(
            model,
            PROMPTS,
            START,
            END,
            max_extra_length=10,
            prefill=prefill,
            **kwargs,
        )
        outputs[prefill] = keras.tree.map_structure(to_numpy, result)
    if isinstance(outputs[True], tuple):
        np.testing.assert_array_equal(outputs[True][0], outputs[False][0])
        np.testing.assert_allclose(
            outputs[True][1], outputs[False][1], atol=1e-5
        )
    else:
        np.testing.assert_array_equal(outputs[True], outputs[False])
    # And the uncached decoder, which reruns the whole prefix every step.
    if search is decoding.greedy_search:
        uncached = search(
            model, PROMPTS, START, END, max_extra_length=10, use_cache=False
        )
        np.testing.assert_array_equal(to_numpy(uncached), outputs[True])


def test_one_prefill_call_fills_the_cache_as_single_steps(model):
    # The model's own step: the whole prompt in one decode_step gives the
    # cache and last logits of feeding it position by position.
    ids = np.array([[START, 5, 6, 7, 8, 9]], "int32")
    cache = model.initial_cache(1, 8)
    logits, filled = model.decode_step(ids, 0, cache)
    stepped = model.initial_cache(1, 8)
    for t in range(ids.shape[1]):
        step_logits, stepped = model.decode_step(ids[:, t : t + 1], t, stepped)
    np.testing.assert_allclose(
        to_numpy(logits)[:, -1], to_numpy(step_logits)[:, 0], atol=1e-5
    )
    for (keys, values), (keys2, values2) in zip(filled, stepped):
        np.testing.assert_allclose(to_numpy(keys), to_numpy(keys2), atol=1e-5)
        np.testing.assert_allclose(
            to_numpy(values), to_numpy(values2), atol=1e-5
        )
