"""Exported SavedModels serve raw text with TensorFlow alone and give what
the in-Python models give.

Each model is exported once per test module (on jax and torch through the
tensorflow-backend subprocess), then one separate Python process that
imports only tensorflow and tensorflow_text (`serving_client.py`) loads
every export and answers every request.
"""

import base64
import concurrent.futures
import types
import warnings

import helpers
import keras
import numpy as np
import pytest

from keras_attention import decoding
from keras_attention import export
from keras_attention import models
from keras_attention.data import LABELS
from keras_attention.data import build_vocabulary
from keras_attention.data import translation
from keras_attention.export.pair_models import python_token_ids

BACKEND = keras.backend.backend()
MAX_SEQUENCE_LENGTH = 16
MAX_WORDS = 12
REFERENCE_ROWS = 8

CORPUS = [
    "a man is riding a horse",
    "two dogs are running in the park",
    "a woman isn't playing the guitar",
    "the children play football on the beach",
    "ein Mann reitet ein Pferd",
    "zwei Hunde rennen im Park",
    "eine Frau spielt nicht Gitarre",
    "die Kinder spielen Fußball am Strand",
]
SOURCES = [
    "a man is riding a horse",
    "two dogs play",
    "the woman isn't running on the beach",
    "ein Mann spielt Fußball",
]
# Every row kind the robust-serving rules cover, around two clean rows.
LONG = "the children play football on the beach " * 250  # 10,000 chars
ROBUST = [
    SOURCES[0].encode(),
    b"",
    LONG.encode(),
    "Grüße aus Köln, 東京 😀 naïve café".encode(),
    b"bad \xff\xfe bytes \xc3",
    b"   ",
    SOURCES[1].encode(),
]
PREMISES = [
    "A man is riding a horse.",
    "Two dogs aren't running in the park...",
    "It's the woman's guitar -- she's playing.",
    "The children play football",
]
HYPOTHESES = [
    "A man isn't riding.",
    "Dogs run",
    "Nobody plays o'clock music!",
    "Kids are on the beach",
]


def as_text(row):
    """What the Python tokenizers see for a request row."""
    return row.decode("utf-8", errors="replace")


def b64(rows):
    return [
        base64.b64encode(r if isinstance(r, bytes) else r.encode()).decode()
        for r in rows
    ]


def decoded(values):
    return [base64.b64decode(v).decode("utf-8") for v in values]


# --- Models and their Python outputs ----------------------------------


def tiny_translator():
    tokenizer = translation.train_tokenizer(CORPUS * 4, vocabulary_size=60)
    keras.utils.set_random_seed(3)
    model = models.Transformer(
        vocabulary_size=60,
        num_layers=1,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        dropout=0.0,
        max_sequence_length=MAX_SEQUENCE_LENGTH,
    )
    # Left random, a model may end every translation at once (it does on
    # jax since layers stopped drawing seeds they do not use), and the
    # string comparisons would compare empty strings. A zero end-token
    # embedding gives the end token a zero (tied) logit, below the best of
    # the 59 random others at every step.
    helpers.zero_token_embedding(model, translation.END_ID)
    return model, tokenizer


def python_translations(model, tokenizer, sentences, beam_size):
    """Beam (or greedy) search from Python; empty sources give `("", 0)`.

    One padded shape for every call (8 rows, filler rows holding just the
    end token, as `translation.translate` pads; `max_sequence_length`
    columns), so that jax compiles each search once. A row's result does
    not depend on the padding (the search limits each row by its own
    length).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoded = translation.encode_sentences(
            tokenizer, sentences, max_length=model.max_sequence_length
        )
    ids = np.zeros((REFERENCE_ROWS, model.max_sequence_length), "int32")
    ids[:, 0] = translation.END_ID
    for row, sentence in enumerate(encoded):
        ids[row, : len(sentence)] = sentence
    if beam_size == 1:
        tokens = decoding.greedy_search(
            model, ids, translation.START_ID, translation.END_ID
        )
        scores = np.full((REFERENCE_ROWS,), np.nan, "float32")
    else:
        tokens, scores = decoding.beam_search(
            model,
            ids,
            translation.START_ID,
            translation.END_ID,
            beam_size=beam_size,
            return_scores=True,
        )
        scores = keras.ops.convert_to_numpy(scores)
    count = len(sentences)
    rows = decoding.strip_special(tokens, translation.END_ID)[:count]
    texts = translation.decode_ids(tokenizer, rows)
    empty = [ids == [translation.END_ID] for ids in encoded]
    texts = ["" if e else t for t, e in zip(texts, empty)]
    scores = np.where(empty, 0.0, scores[:count])
    return texts, scores


def python_pair_outputs(model, vocabulary, first, second, names):
    inputs = {
        names[0]: python_token_ids(first, vocabulary, MAX_WORDS),
        names[1]: python_token_ids(second, vocabulary, MAX_WORDS),
    }
    if BACKEND == "jax":
        outputs = model.predict_on_batch(inputs)  # one compile, not per op
    else:
        outputs = model(inputs, training=False)  # eager: no tracing
    if isinstance(outputs, dict):
        outputs = outputs["score"]
    return keras.ops.convert_to_numpy(outputs)


# --- Fixtures: export once, serve once ---------------------------------


def export_all(jobs):
    """Runs `{name: export function}`, returns `{name: path}`.

    On jax and torch each export is a tensorflow-backend subprocess, so
    they run side by side (most of their time is importing TensorFlow).
    """
    if BACKEND == "tensorflow":
        return {name: job() for name, job in jobs.items()}
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("exports")
    made, jobs = {}, {}
    vocabulary = build_vocabulary(PREMISES + HYPOTHESES + CORPUS)
    keras.utils.set_random_seed(5)
    classifier = models.decomposable_attention_model(
        len(vocabulary),
        embedding_dim=8,
        hidden_dim=8,
        intra_attention=True,
        seed=5,
    )
    made["classifier"] = types.SimpleNamespace(
        model=classifier, vocabulary=vocabulary
    )
    jobs["classifier"] = lambda: export.export_classifier(
        classifier,
        root / "classifier",
        vocabulary=vocabulary,
        max_length=MAX_WORDS,
    )
    # The torch route is the jax route (the same subprocess export); on
    # torch the classifier covers it within the torch test-time budget.
    if BACKEND != "torch":
        model, tokenizer = tiny_translator()
        made["translator"] = types.SimpleNamespace(
            model=model, tokenizer=tokenizer
        )
        jobs["translator"] = lambda: export.export_translator(
            model, root / "translator", tokenizer=tokenizer
        )
    if BACKEND == "tensorflow":
        regressor = models.ReSANRelatedness(
            len(vocabulary), embedding_dim=8, hidden_dim=4, seed=5
        )
        made["regressor"] = types.SimpleNamespace(
            model=regressor, vocabulary=vocabulary
        )
        jobs["regressor"] = lambda: export.export_regressor(
            regressor,
            root / "regressor",
            vocabulary=vocabulary,
            max_length=MAX_WORDS,
        )
    for name, path in export_all(jobs).items():
        made[name].path = path
    return made


def requests_for(exported):
    """`{name: request}` for every exported model."""
    requests = {}
    if "translator" in exported:
        path = exported["translator"].path
        for signature in ("serving_default", "greedy"):
            for batch, rows in (("clean", SOURCES), ("robust", ROBUST)):
                requests[f"translator/{signature}/{batch}"] = {
                    "path": path,
                    "signature": signature,
                    "inputs": {"inputs": b64(rows)},
                }
    pairs = {
        "clean": (PREMISES, HYPOTHESES),
        "robust": (ROBUST, list(reversed(ROBUST))),
    }
    for name, inputs in (
        ("classifier", ("premise", "hypothesis")),
        ("regressor", ("sentence_a", "sentence_b")),
    ):
        if name not in exported:
            continue
        for batch, (first, second) in pairs.items():
            requests[f"{name}/{batch}"] = {
                "path": exported[name].path,
                "signature": "serving_default",
                "inputs": {inputs[0]: b64(first), inputs[1]: b64(second)},
            }
    return requests


@pytest.fixture(scope="module")
def served(exported, tmp_path_factory):
    folder = tmp_path_factory.mktemp("serving")
    answers, answer = helpers.serve(requests_for(exported), folder)
    modules = answer["modules_at_start"], answer["modules_at_end"]
    answers["signatures"] = answer["signatures"]
    return answers, modules


def need(exported, name):
    if name not in exported:
        pytest.skip(f"{name} export is tested on other backends (budget)")
    return exported[name]


# --- Tests ---------------------------------------------------------------


def test_serving_process_imports_only_tensorflow(served):
    _, (at_start, at_end) = served
    assert "tensorflow" in at_start and "tensorflow_text" in at_start
    # Loading and calling the models imports nothing more (in particular
    # no Keras module beyond what `import tensorflow` itself loads).
    assert at_end == at_start
    for name in ("keras_hub", "keras_attention"):
        assert name not in at_end


@pytest.mark.parametrize("signature", ["serving_default", "greedy"])
def test_translator_matches_python_search(exported, served, signature):
    translator = need(exported, "translator")
    answers, _ = served
    beams = 4 if signature == "serving_default" else 1
    texts, scores = python_translations(
        translator.model, translator.tokenizer, SOURCES, beams
    )
    answer = answers[f"translator/{signature}/clean"]
    assert decoded(answer["outputs"]) == texts
    assert all(texts), "every clean source should translate to something"
    if beams > 1:
        np.testing.assert_allclose(answer["scores"], scores, atol=1e-4)
    assert np.all(np.asarray(answer["scores"]) < 0)


@pytest.mark.parametrize("signature", ["serving_default", "greedy"])
def test_translator_robust_batch(exported, served, signature):
    translator = need(exported, "translator")
    answers, _ = served
    beams = 4 if signature == "serving_default" else 1
    robust = answers[f"translator/{signature}/robust"]
    clean = answers[f"translator/{signature}/clean"]
    outputs = decoded(robust["outputs"])
    scores = np.asarray(robust["scores"])
    # Empty and blank rows: an empty translation with score 0.
    for row in (1, 5):
        assert outputs[row] == "" and scores[row] == 0.0
    # Every other row, including the 10,000 characters (cut to the
    # model's length), the non-ASCII and the invalid UTF-8 row (bytes
    # replaced by U+FFFD), is what Python gives for it.
    texts, _ = python_translations(
        translator.model,
        translator.tokenizer,
        [as_text(r) for r in ROBUST],
        beams,
    )
    assert outputs == texts
    # The clean rows are unchanged by their neighbours.
    assert [outputs[0], outputs[6]] == decoded(clean["outputs"])[:2]
    np.testing.assert_allclose(
        scores[[0, 6]], np.asarray(clean["scores"])[:2], atol=1e-5
    )


def test_classifier_matches_python_within_1e_5(exported, served):
    classifier = exported["classifier"]
    answers, _ = served
    answer = answers["classifier/clean"]
    expected = python_pair_outputs(
        classifier.model,
        classifier.vocabulary,
        PREMISES,
        HYPOTHESES,
        ("premise", "hypothesis"),
    )
    probabilities = np.asarray(answer["probabilities"])
    assert probabilities.shape == (len(PREMISES), 3)
    np.testing.assert_allclose(probabilities, expected, atol=1e-5, rtol=0)
    labels = [LABELS[i] for i in np.argmax(expected, axis=-1)]
    assert decoded(answer["label"]) == labels


def test_classifier_robust_batch(exported, served):
    classifier = exported["classifier"]
    answers, _ = served
    answer = answers["classifier/robust"]
    first = [as_text(r) for r in ROBUST]
    expected = python_pair_outputs(
        classifier.model,
        classifier.vocabulary,
        first,
        list(reversed(first)),
        ("premise", "hypothesis"),
    )
    probabilities = np.asarray(answer["probabilities"])
    assert np.all(np.isfinite(probabilities))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(probabilities, expected, atol=1e-5, rtol=0)


def test_regressor_matches_python_within_1e_5(exported, served):
    regressor = need(exported, "regressor")
    answers, _ = served
    for batch, (first, second) in {
        "clean": (PREMISES, HYPOTHESES),
        "robust": (
            [as_text(r) for r in ROBUST],
            [as_text(r) for r in reversed(ROBUST)],
        ),
    }.items():
        expected = python_pair_outputs(
            regressor.model,
            regressor.vocabulary,
            first,
            second,
            ("sentence_a", "sentence_b"),
        )
        score = np.asarray(answers[f"regressor/{batch}"]["score"])
        assert score.shape == (len(first),)
        assert np.all((score >= 1.0) & (score <= 5.0))
        np.testing.assert_allclose(score, expected, atol=1e-5, rtol=0)


SIGNATURES = {
    "translator": {
        "greedy": {
            "inputs": {"inputs": ("string", [-1])},
            "outputs": {
                "outputs": ("string", [-1]),
                "scores": ("float32", [-1]),
            },
        },
        "serving_default": {
            "inputs": {"inputs": ("string", [-1])},
            "outputs": {
                "outputs": ("string", [-1]),
                "scores": ("float32", [-1]),
            },
        },
    },
    "classifier": {
        "serving_default": {
            "inputs": {
                "hypothesis": ("string", [-1]),
                "premise": ("string", [-1]),
            },
            "outputs": {
                "label": ("string", [-1]),
                "probabilities": ("float32", [-1, 3]),
            },
        }
    },
    "regressor": {
        "serving_default": {
            "inputs": {
                "sentence_a": ("string", [-1]),
                "sentence_b": ("string", [-1]),
            },
            "outputs": {"score": ("float32", [-1])},
        }
    },
}


@pytest.mark.parametrize("max_sequence_length", [5, 16, 64, 100, 256])
def test_source_widths_are_translate_widths_up_to_64(max_sequence_length):
    widths = export.translator.bucket_widths(max_sequence_length)
    assert widths == sorted(set(widths))
    assert widths[-1] == max_sequence_length
    for length in range(1, max_sequence_length + 1):
        # The search pads a source of `length` subwords to this width.
        width = next(w for w in widths if w >= length)
        padded_by_translate = min(-(-length // 8) * 8, max_sequence_length)
        if length <= 64:
            assert width == padded_by_translate
        else:
            assert width - length < 32


def test_signatures_have_the_documented_names_and_dtypes(exported):
    for name, made in exported.items():
        assert export.signature_summary(made.path) == SIGNATURES[name]


def test_every_op_is_core_tensorflow_or_tensorflow_text(exported):
    text_ops = export.inspection.tensorflow_text_op_names()
    for name, made in exported.items():
        assert export.nonstandard_op_names(made.path) == [], name
        used = set(export.graph_op_names(made.path))
        if name == "translator":
            assert {"SentencepieceTokenizeOp", "While"} <= used
            assert used & text_ops
        else:
            assert {"StaticRegexReplace", "LookupTableFindV2"} <= used


def test_loaded_signatures_have_the_documented_names_and_dtypes(
    exported, served
):
    answers, _ = served
    for name, made in exported.items():
        loaded = answers["signatures"][made.path]
        expected = {
            signature: {
                side: {
                    key: [dtype, [None if d == -1 else d for d in shape]]
                    for key, (dtype, shape) in specs.items()
                }
                for side, specs in sides.items()
            }
            for signature, sides in SIGNATURES[name].items()
        }
        assert loaded == expected, name


@pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="the exported graph is the same from every backend; the jax "
    "route exports through a tensorflow subprocess (checked once)",
)
@pytest.mark.parametrize(
    "inputs, received",
    [("a man", "of rank] [0]"), ([["a man"], ["a dog"]], "of rank] [2]")],
)
def test_translator_signature_refuses_other_ranks(exported, inputs, received):
    import tensorflow as tf

    loaded = tf.saved_model.load(need(exported, "translator").path)
    for name in ("serving_default", "greedy"):
        signature = loaded.signatures[name]
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            signature(inputs=tf.constant(inputs))
        message = str(info.value)
        assert "Input `inputs` must be a 1-D batch of strings" in message
        assert received in message, message
    # The same signature still answers a good batch.
    answer = loaded.signatures["serving_default"](inputs=tf.constant(["a"]))
    assert answer["outputs"].shape == (1,)


@pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="an in-process export and load (tensorflow); the jax route "
    "exports through the same tensorflow code",
)
def test_translator_jit_compile_export_and_export_after_decoding(tmp_path):
    import tensorflow as tf

    model, tokenizer = tiny_translator()
    # Decoding first leaves traced searches (with XLA's slice update op)
    # in the search cache: the default export must not reuse them.
    texts, scores = python_translations(model, tokenizer, SOURCES, 4)
    plain = export.export_translator(model, tmp_path / "plain", tokenizer)
    assert export.nonstandard_op_names(plain) == []
    path = export.export_translator(
        model, tmp_path / "xla", tokenizer, jit_compile=True
    )
    # The XLA graph keeps XLA's own op; TF Serving runs it with XLA on.
    assert export.nonstandard_op_names(path) == ["XlaDynamicUpdateSlice"]
    assert export.signature_summary(path) == SIGNATURES["translator"]
    loaded = tf.saved_model.load(path)
    answer = loaded.signatures["serving_default"](inputs=tf.constant(SOURCES))
    assert [t.decode() for t in answer["outputs"].numpy()] == texts
    np.testing.assert_allclose(answer["scores"].numpy(), scores, atol=1e-4)
    with pytest.raises(ValueError, match="jit_compile='yes'"):
        export.export_translator(
            model, tmp_path / "bad", tokenizer, jit_compile="yes"
        )
