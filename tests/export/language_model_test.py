"""The language model's SavedModel serves token ids with TensorFlow alone
and gives what Python decoding gives.

The model is exported once per test module (on tensorflow from its
`.keras` file, on jax and torch from the object, through the
tensorflow-backend subprocess), then one separate Python process that
imports only tensorflow and tensorflow_text (`serving_client.py`) answers
every request, good and bad.
"""

import re

import helpers
import keras
import numpy as np
import pytest

from keras_attention import decoding
from keras_attention import export
from keras_attention import models
from keras_attention.export.language_model import prompt_widths
from keras_attention.export.language_model import sampling_uniforms

BACKEND = keras.backend.backend()
VOCABULARY_SIZE = 40
MAX_SEQUENCE_LENGTH = 20
EXTRA = 6
START_ID, END_ID = 1, 2
SAMPLING = dict(temperature=1.5, top_k=20, top_p=0.95)
# Continuations are min(EXTRA, MAX_SEQUENCE_LENGTH) columns wide.
WIDTH = EXTRA
# Rows of the batch the reference scores are computed on.
SCORED_ROWS = 8


def prompts(*lengths, width=None):
    """Right-padded prompts `(B, width)` of the given lengths, ids >= 3."""
    width = width or max(lengths)
    rows = np.zeros((len(lengths), width), "int32")
    for row, length in enumerate(lengths):
        rows[row, :length] = 3 + (np.arange(length) * 7 + row * 5) % 37
    return rows


# Prompt batches, padded to a bucket width in the graph.
BATCHES = {
    # Longest 8, a bucket width; an empty prompt.
    "boundary": prompts(3, 8, 1, 0, 5),
    # Longest 9: one past the first width, padded to 16.
    "wide": prompts(9, 2, 6, width=12),
    # Longest 19 (max_sequence_length - 1): room for one token (the end).
    "longest": prompts(19, 4),
    # Padded past max_sequence_length: the graph drops padding columns.
    "over_padded": prompts(4, 2, 7, width=30),
}
# (batch, seed) of the sample requests.
SAMPLES = [
    ("boundary", 7),
    ("boundary", 7),
    ("boundary", 8),
    ("wide", -3),
    ("longest", 11),
]
BAD = {
    "id_too_large": (prompts(3, 2).tolist(), VOCABULARY_SIZE),
    "negative_id": (prompts(3, 2).tolist(), -1),
    "rank_1": ([5, 6, 7], None),
    "rank_3": ([[[5, 6]], [[7, 8]]], None),
    "id_after_padding": ([[5, 0, 6]], None),
    "too_long": (prompts(MAX_SEQUENCE_LENGTH).tolist(), None),
}


def bad_ids(name):
    ids, value = BAD[name]
    if value is not None:
        ids[0][1] = value
    return ids


def tiny_language_model(max_sequence_length=MAX_SEQUENCE_LENGTH):
    keras.utils.set_random_seed(3)
    model = models.TransformerLanguageModel(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=1,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        dropout=0.0,
        max_sequence_length=max_sequence_length,
    )
    # A zero end-token embedding gives the end token a zero logit, below
    # the best of the random others: greedy continuations run to their
    # limit instead of ending at once; sampling still draws it sometimes.
    helpers.zero_token_embedding(model, END_ID)
    return model


def bucket(ids):
    """The prompts cut to the longest one and padded to its bucket width,
    as the graph pads them."""
    longest = int((ids != 0).sum(axis=1).max())
    width = next(w for w in prompt_widths(MAX_SEQUENCE_LENGTH) if w >= longest)
    padded = np.zeros((len(ids), width), "int32")
    padded[:, :longest] = ids[:, :longest]
    return padded


def trimmed(ids):
    """The prompts cut to the longest one: what Python's searches take."""
    return ids[:, : int((ids != 0).sum(axis=1).max())]


def to_numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


# --- Fixtures: export once, serve once ---------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("language_model")
    model = tiny_language_model()
    source = model
    if BACKEND == "tensorflow":
        # The jax and torch routes export from a `.keras` file in the
        # subprocess; on tensorflow the file is read in this process.
        source = root / "language_model.keras"
        model.save(source)
    path = export.export_language_model(
        source,
        root / "export",
        START_ID,
        END_ID,
        max_extra_length=EXTRA,
        **SAMPLING,
    )
    return model, path


def requests_for(path):
    requests = {}
    for name, ids in BATCHES.items():
        requests[f"greedy/{name}"] = {
            "path": path,
            "signature": "serving_default",
            "ints": {"token_ids": ids.tolist()},
        }
    for index, (name, seed) in enumerate(SAMPLES):
        requests[f"sample/{index}"] = {
            "path": path,
            "signature": "sample",
            "ints": {"token_ids": BATCHES[name].tolist(), "seed": seed},
        }
    for name in BAD:
        for signature in ("serving_default", "sample"):
            ints = {"token_ids": bad_ids(name)}
            if signature == "sample":
                ints["seed"] = 1
            requests[f"bad/{name}/{signature}"] = {
                "path": path,
                "signature": signature,
                "ints": ints,
                "expect_error": True,
            }
    return requests


@pytest.fixture(scope="module")
def served(exported, tmp_path_factory):
    _, path = exported
    folder = tmp_path_factory.mktemp("language_model_serving")
    return helpers.serve(requests_for(path), folder)


# --- Tests ---------------------------------------------------------------


def test_serving_process_imports_no_keras_attention(served):
    _, answer = served
    assert answer["modules_at_end"] == answer["modules_at_start"]
    assert "keras_attention" not in answer["modules_at_end"]


def python_scores(model, ids, tokens):
    """Float64 sums of the model's log-probabilities of each row's
    continuation, end id included, from the whole decoder (no cache)."""
    rows = []
    for prompt, continuation in zip(ids, tokens):
        prompt = [int(t) for t in prompt if t != 0]
        kept = [int(t) for t in continuation if t != 0]
        rows.append(([START_ID] + prompt, kept))
    # The last token of a row is read, never fed. One padded shape for
    # every call (padding after a row does not change its logits), so
    # that jax compiles the model once.
    buffer = np.zeros((SCORED_ROWS, MAX_SEQUENCE_LENGTH), "int32")
    for row, (prefix, kept) in enumerate(rows):
        buffer[row, : len(prefix) + len(kept) - 1] = (prefix + kept)[:-1]
    logits = np.float64(to_numpy(model.predict_on_batch(buffer)))
    logits -= logits.max(axis=-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    return np.array(
        [
            sum(
                log_probs[row, len(prefix) - 1 + j, token]
                for j, token in enumerate(kept)
            )
            for row, (prefix, kept) in enumerate(rows)
        ]
    )


def check_lengths_and_scores(model, ids, answer):
    tokens = np.asarray(answer["token_ids"])
    # Each row ends with the end id, then padding.
    lengths = np.argmax(tokens == END_ID, axis=1) + 1
    assert np.all(tokens[np.arange(len(tokens)), lengths - 1] == END_ID)
    assert answer["lengths"] == lengths.tolist()
    np.testing.assert_allclose(
        answer["scores"], python_scores(model, ids, tokens), atol=1e-4
    )


@pytest.mark.parametrize("name", list(BATCHES))
def test_greedy_matches_python_greedy_search(exported, served, name):
    model, _ = exported
    answers, _ = served
    ids = BATCHES[name]
    answer = answers[f"greedy/{name}"]
    expected = decoding.greedy_search(
        model, trimmed(ids), START_ID, END_ID, max_extra_length=EXTRA
    )
    tokens = np.asarray(answer["token_ids"])
    assert tokens.shape == (len(ids), WIDTH)
    np.testing.assert_array_equal(tokens, to_numpy(expected))
    check_lengths_and_scores(model, ids, answer)


def test_longest_prompt_leaves_room_for_the_end_id_only(served):
    answers, _ = served
    answer = answers["greedy/longest"]
    # 19 prompt tokens: the 20th is the forced end id. The other row,
    # decoded in the same width-19 bucket, keeps its own limit (EXTRA
    # tokens; the model never prefers the end id, whose logit is 0).
    assert answer["token_ids"][0] == [END_ID] + [0] * (WIDTH - 1)
    assert answer["lengths"] == [1, EXTRA]


def test_sample_same_seed_same_tokens_other_seed_other_tokens(served):
    answers, _ = served
    first, again, other = (
        np.asarray(answers[f"sample/{i}"]["token_ids"]) for i in range(3)
    )
    np.testing.assert_array_equal(first, again)
    assert answers["sample/0"] == answers["sample/1"]
    assert np.any(first != other)
    greedy = np.asarray(answers["greedy/boundary"]["token_ids"])
    assert np.any(first != greedy)


def python_sample(model, index):
    """`decoding.sample` for the sample request `index`, its prompts
    padded to the width the graph pads them to."""
    name, seed = SAMPLES[index]
    tokens = decoding.sample(
        model,
        bucket(BATCHES[name]),
        START_ID,
        END_ID,
        max_extra_length=EXTRA,
        seed=seed,
        **SAMPLING,
    )
    return to_numpy(tokens)


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_sample_matches_python_sample_with_the_same_uniforms(
    exported, served, monkeypatch, index
):
    model, _ = exported
    answers, _ = served
    name, seed = SAMPLES[index]
    ids = bucket(BATCHES[name])
    batch, width = ids.shape
    length = min(width + EXTRA, MAX_SEQUENCE_LENGTH)
    uniforms = sampling_uniforms(seed, length, batch).numpy()
    assert uniforms.shape == (length, batch)

    def fixed_uniforms(shape, seed=None, **kwargs):
        assert tuple(shape) == (length, batch)
        return keras.ops.convert_to_tensor(uniforms)

    # `decoding.sample` draws its uniforms with `keras.random.uniform`.
    monkeypatch.setattr(keras.random, "uniform", fixed_uniforms)
    answer = answers[f"sample/{index}"]
    np.testing.assert_array_equal(
        answer["token_ids"], python_sample(model, index)
    )
    check_lengths_and_scores(model, ids, answer)


@pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="keras.random.uniform draws these uniforms on tensorflow only",
)
@pytest.mark.parametrize("index", [0, 3])
def test_sample_matches_python_sample_with_the_same_seed(
    exported, served, index
):
    model, _ = exported
    answers, _ = served
    np.testing.assert_array_equal(
        answers[f"sample/{index}"]["token_ids"], python_sample(model, index)
    )


SIGNATURE = {
    "inputs": {"token_ids": ("int32", [-1, -1])},
    "outputs": {
        "token_ids": ("int32", [-1, WIDTH]),
        "lengths": ("int32", [-1]),
        "scores": ("float32", [-1]),
    },
}
SIGNATURES = {
    "serving_default": SIGNATURE,
    "sample": {
        "inputs": {**SIGNATURE["inputs"], "seed": ("int32", [])},
        "outputs": SIGNATURE["outputs"],
    },
}


def test_signatures_have_the_documented_names_dtypes_and_shapes(
    exported, served
):
    _, path = exported
    _, answer = served
    assert export.signature_summary(path) == SIGNATURES
    loaded = answer["signatures"][path]
    assert loaded == {
        signature: {
            side: {
                key: [dtype, [None if d == -1 else d for d in shape]]
                for key, (dtype, shape) in specs.items()
            }
            for side, specs in sides.items()
        }
        for signature, sides in SIGNATURES.items()
    }


def test_every_op_is_core_tensorflow(exported):
    _, path = exported
    assert export.nonstandard_op_names(path) == []
    used = set(export.graph_op_names(path))
    # The search loop, the core slice update, the in-graph uniforms, the
    # padded widths and the request checks.
    assert {
        "While",
        "TensorStridedSliceUpdate",
        "StatelessRandomUniformV2",
        "Case",
        "Assert",
    } <= used
    assert "XlaDynamicUpdateSlice" not in used


@pytest.mark.parametrize("name", list(BAD))
@pytest.mark.parametrize("signature", ["serving_default", "sample"])
def test_bad_token_ids_get_an_error_naming_them(served, name, signature):
    answers, _ = served
    answer = answers[f"bad/{name}/{signature}"]
    assert set(answer) == {"error"}, answer
    message = answer["error"]
    assert "Input `token_ids` must" in message, message
    expected = {
        "id_too_large": "ids in [0, 40)",
        "negative_id": "ids from] [-1] [to]",
        "rank_1": "of rank] [1] [and shape] [3]",
        "rank_3": "of rank] [3]",
        "id_after_padding": "an id after a 0 in row] [0]",
        "too_long": "a prompt of] [20] [tokens]",
    }[name]
    assert expected in message, message


def test_bad_arguments_name_themselves(tmp_path):
    model = tiny_language_model()
    cases = [
        (dict(start_id=0), "start_id=0"),
        (dict(end_id=[]), "end_id=[]"),
        (dict(end_id=VOCABULARY_SIZE), f"end_id={VOCABULARY_SIZE}"),
        (dict(start_id=VOCABULARY_SIZE), f"start_id={VOCABULARY_SIZE}"),
        (dict(temperature=-1.0), "temperature=-1.0"),
        (dict(top_p=1.5), "top_p=1.5"),
        (dict(max_extra_length=0), "max_extra_length=0"),
        (dict(jit_compile="yes"), "jit_compile='yes'"),
    ]
    for overrides, received in cases:
        arguments = {"start_id": START_ID, "end_id": END_ID, **overrides}
        with pytest.raises(ValueError, match=re.escape(received)):
            export.export_language_model(model, tmp_path, **arguments)
    encoder_decoder = models.Transformer(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=1,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=8,
    )
    with pytest.raises(ValueError, match="decoder-only language model"):
        export.export_language_model(encoder_decoder, tmp_path, 1, 2)
    with pytest.raises(ValueError, match="model_or_path="):
        export.export_language_model(tmp_path / "missing.keras", tmp_path, 1, 2)
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="an in-process export and load (tensorflow); the jax and torch "
    "routes export through the same tensorflow code",
)
def test_jit_compile_export_and_export_after_decoding(tmp_path):
    import tensorflow as tf

    # One prompt width (8): the two exports trace one search each.
    model = tiny_language_model(max_sequence_length=9)
    ids = prompts(3, 5)
    # Decoding first leaves traced searches (with XLA's slice update op)
    # in the search cache: the default export must not reuse them.
    expected = decoding.greedy_search(
        model, ids, START_ID, END_ID, max_extra_length=EXTRA
    )
    plain = export.export_language_model(
        model, tmp_path / "plain", START_ID, END_ID, max_extra_length=EXTRA
    )
    assert export.nonstandard_op_names(plain) == []
    path = export.export_language_model(
        model,
        tmp_path / "xla",
        START_ID,
        END_ID,
        max_extra_length=EXTRA,
        jit_compile=True,
    )
    assert export.nonstandard_op_names(path) == ["XlaDynamicUpdateSlice"]
    loaded = tf.saved_model.load(path)
    answer = loaded.signatures["serving_default"](token_ids=tf.constant(ids))
    np.testing.assert_array_equal(answer["token_ids"], to_numpy(expected))
