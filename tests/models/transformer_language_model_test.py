import os
import tempfile

import keras
import numpy as np
import pytest
from keras import ops

import keras_attention
from keras_attention import decoding
from keras_attention.models import TransformerLanguageModel
from keras_attention.models import transformer_base

START, END, SEPARATOR = 1, 2, 3


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def tiny(**kwargs):
    config = dict(
        vocabulary_size=23,
        num_layers=2,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    config.update(kwargs)
    return TransformerLanguageModel(**config)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(5)
    return tiny(num_layers=2, hidden_dim=16, max_sequence_length=24)


# Ragged prompts, right-padded with 0.
PROMPTS = np.array([[5, 6, 7, 8], [9, 10, 0, 0], [11, 0, 0, 0]], "int32")


def test_tied_embedding_and_no_cross_attention():
    model = tiny()
    matrices = [w for w in model.weights if tuple(w.shape) == (23, 8)]
    assert len(matrices) == 1
    assert not [w.path for w in model.weights if "cross_attention" in w.path]
    assert all(block.cross_attention is None for block in model.decoder_blocks)
    blocks = sum(block.count_params() for block in model.decoder_blocks)
    assert model.count_params() == 23 * 8 + blocks
    logits = model(np.array([[1, 4, 5]], "int32"))
    assert tuple(ops.shape(logits)) == (1, 3, 23)


@pytest.mark.parametrize(
    "norm_first, position", [(False, "sinusoidal"), (True, "learned")]
)
def test_positions_never_see_later_tokens_or_padding(norm_first, position):
    model = tiny(norm_first=norm_first, position=position)
    a = to_numpy(model(np.array([[1, 6, 7, 8]], "int32")))
    b = to_numpy(model(np.array([[1, 6, 9, 9]], "int32")))
    np.testing.assert_allclose(a[:, :2], b[:, :2], atol=1e-5)
    assert not np.allclose(a[:, 2:], b[:, 2:])
    padded = to_numpy(model(np.array([[1, 6, 7, 8, 0, 0]], "int32")))
    np.testing.assert_allclose(padded[:, :4], a, atol=1e-5)


def test_keras_file_reloads_with_same_outputs():
    model = tiny(seed=1, norm_first=True)
    ids = np.array([[1, 4, 5, 0], [1, 6, 0, 0]], "int32")
    expected = to_numpy(model(ids))
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        revived = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(revived, TransformerLanguageModel)
    assert revived.get_config() == model.get_config()
    np.testing.assert_allclose(to_numpy(revived(ids)), expected, atol=1e-6)
    assert all(b.cross_attention is None for b in revived.decoder_blocks)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decode_step_with_cache_equals_full_decoding(norm_first):
    model = tiny(norm_first=norm_first)
    ids = np.array([[1, 6, 7, 8, 9], [1, 10, 11, 12, 13]], "int32")
    full = to_numpy(model.decode(ids))
    np.testing.assert_allclose(full, to_numpy(model(ids)), atol=1e-6)
    cache = model.initial_cache(2, 5)
    assert len(cache) == 2  # one (keys, values) pair per layer
    assert tuple(ops.shape(cache[0][0])) == (2, 2, 5, 4)  # (B, N, L, H)
    steps = []
    for t in range(5):
        logits, cache = model.decode_step(ids[:, t : t + 1], t, cache)
        steps.append(to_numpy(logits))
    np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)
    # A prefill of three positions, then one.
    cache = model.initial_cache(2, 5)
    first, cache = model.decode_step(ids[:, :3], 0, cache)
    rest, cache = model.decode_step(ids[:, 3:4], 3, cache)
    np.testing.assert_allclose(to_numpy(first), full[:, :3], atol=1e-5)
    np.testing.assert_allclose(to_numpy(rest), full[:, 3:4], atol=1e-5)


def test_stacked_cache_and_output_kernel_give_the_same_logits():
    # keras-hub's stacked cache through the same step, one position at a
    # time, then a prefill of three positions (several queries, the
    # batched attention path); the output projection transposed once.
    model = tiny()
    ids = np.array([[1, 6, 7, 8, 9], [1, 10, 11, 12, 13]], "int32")
    pairs = model.initial_cache(2, 5)
    stacked = keras_attention.ops.to_stacked_cache(pairs)
    assert tuple(ops.shape(stacked)) == (2, 2, 2, 5, 2, 4)
    kernel = transformer_base.output_kernel(model)
    projected = pairs
    for t in range(5):
        expected, pairs = model.decode_step(ids[:, t : t + 1], t, pairs)
        actual, stacked = model.decode_step(ids[:, t : t + 1], t, stacked)
        np.testing.assert_allclose(
            to_numpy(actual), to_numpy(expected), atol=1e-6
        )
        with_kernel, projected = model.decode_step(
            ids[:, t : t + 1], t, projected, output_kernel=kernel
        )
        np.testing.assert_allclose(
            to_numpy(with_kernel), to_numpy(expected), atol=1e-5
        )
    np.testing.assert_allclose(
        to_numpy(keras_attention.ops.to_stacked_cache(pairs)),
        to_numpy(stacked),
        atol=1e-6,
    )
    full = to_numpy(model.decode(ids))
    stacked = keras_attention.ops.to_stacked_cache(model.initial_cache(2, 5))
    first, stacked = model.decode_step(ids[:, :3], 0, stacked)
    rest, stacked = model.decode_step(ids[:, 3:4], 3, stacked)
    np.testing.assert_allclose(to_numpy(first), full[:, :3], atol=1e-5)
    np.testing.assert_allclose(to_numpy(rest), full[:, 3:4], atol=1e-5)


def reference_greedy(model, prompts, steps):
    """Greedy continuations by rerunning `decode` in a Python loop."""
    results = []
    for prompt in prompts:
        ids = [START] + [t for t in prompt.tolist() if t != 0]
        continuation = []
        for _ in range(steps):
            # One fixed width (trailing padding is causally invisible), so
            # eager jax compiles its ops once.
            buffer = np.zeros((1, 12), "int32")
            buffer[0, : len(ids)] = ids
            logits = to_numpy(model.decode(buffer))[0, len(ids) - 1]
            logits[0] = -np.inf  # never padding
            token = int(np.argmax(logits))
            continuation.append(token)
            ids.append(token)
            if token == END:
                break
        results.append(continuation)
    return results


def test_greedy_search_continues_each_prompt(model):
    tokens = to_numpy(
        decoding.greedy_search(model, PROMPTS, START, END, max_extra_length=4)
    )
    assert tokens.shape == (3, 4)
    expected = reference_greedy(model, PROMPTS, 4)
    for row, continuation in zip(tokens.tolist(), expected):
        if END in continuation:
            continuation = continuation[: continuation.index(END) + 1]
        else:
            # Forced to end at the length limit.
            continuation = continuation[:3] + [END]
        padded = continuation + [0] * (4 - len(continuation))
        assert row == padded


def test_cached_search_equals_uncached(model):
    for kwargs in ({}, {"beam_size": 3, "return_scores": True}):
        search = decoding.beam_search if kwargs else decoding.greedy_search
        cached = search(
            model, PROMPTS, START, END, max_extra_length=4, **kwargs
        )
        uncached = search(
            model,
            PROMPTS,
            START,
            END,
            max_extra_length=4,
            use_cache=False,
            **kwargs,
        )
        if kwargs:
            (cached, s1), (uncached, s2) = cached, uncached
            np.testing.assert_allclose(to_numpy(s1), to_numpy(s2), atol=1e-4)
        np.testing.assert_array_equal(to_numpy(cached), to_numpy(uncached))


def test_beam_of_one_is_greedy(model):
    greedy = decoding.greedy_search(model, PROMPTS, START, END)
    beam = decoding.beam_search(model, PROMPTS, START, END, beam_size=1)
    np.testing.assert_array_equal(to_numpy(beam), to_numpy(greedy))


def test_prompt_leaving_no_room_is_a_clear_error(model):
    with pytest.raises(ValueError, match=r"encoder_token_ids with shape"):
        decoding.greedy_search(model, np.ones((1, 24), "int32"), START, END)
    with pytest.raises(ValueError, match=r"\(4 here\)"):
        decoding.greedy_search(model, PROMPTS, START, END, max_length=4)


def copy_task(rng, count, width=4):
    """[start, a, separator, a, end] with a of `width` random symbols."""
    symbols = rng.integers(4, 12, size=(count, width))
    column = np.ones((count, 1), "int64")
    sequences = np.concatenate(
        [START * column, symbols, SEPARATOR * column, symbols, END * column],
        axis=1,
    ).astype("int32")
    return symbols, sequences


def test_trains_on_a_copy_task_and_decodes_the_copy():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    width = 4
    _, sequences = copy_task(rng, 1024, width)
    inputs, targets = sequences[:, :-1], sequences[:, 1:]
    # Only the copy (after the separator) is predictable.
    weights = np.zeros(targets.shape, "float32")
    weights[:, width:] = 1.0
    model = TransformerLanguageModel(
        vocabulary_size=12,
        num_layers=1,
        hidden_dim=32,
        num_heads=2,
        intermediate_dim=64,
        dropout=0.0,
        position="learned",
        max_sequence_length=16,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(
        inputs,
        targets,
        sample_weight=weights,
        batch_size=64,
        epochs=20,
        verbose=0,
    )
    losses = history.history["loss"]
    assert losses[-1] < 0.1 * losses[0], losses
    symbols, _ = copy_task(rng, 16, width)
    prompts = np.concatenate(
        [symbols, np.full((16, 1), SEPARATOR)], axis=1
    ).astype("int32")
    copies = to_numpy(
        decoding.greedy_search(
            model, prompts, START, END, max_extra_length=width + 1
        )
    )
    assert copies.shape == (16, width + 1)
    accuracy = np.mean(copies[:, :width] == symbols)
    assert accuracy >= 0.8, (accuracy, copies)
    assert np.mean(copies[:, width] == END) >= 0.8


def test_presets_and_bad_arguments():
    model = TransformerLanguageModel.from_preset(
        "tiny", vocabulary_size=31, num_layers=1
    )
    assert model.hidden_dim == 128 and model.num_layers == 1
    with pytest.raises(ValueError, match="Received: preset='huge'"):
        TransformerLanguageModel.from_preset("huge", vocabulary_size=10)
    with pytest.raises(ValueError, match="hidden_dim=10, num_heads=4"):
        TransformerLanguageModel(vocabulary_size=10, hidden_dim=10, num_heads=4)
    with pytest.raises(ValueError, match="Received: vocabulary_size=0"):
        TransformerLanguageModel(vocabulary_size=0)
