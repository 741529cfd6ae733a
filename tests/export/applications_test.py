"""The applications' export scripts turn run folders into SavedModels, and
the exporters reject bad arguments with clear errors.

The scripts call the same exporters as `export_test.py` (which covers the
jax and torch routes); they run here on the tensorflow pass only.
"""

import json
import pathlib

import helpers
import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import decoding
from keras_attention import export
from keras_attention import models
from keras_attention.data import translation
from keras_attention.export.pair_models import python_token_ids

ROOT = pathlib.Path(__file__).resolve().parents[2]
TENSORFLOW_ONLY = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the scripts call the exporters tested on every backend in "
    "export_test.py; run on the tensorflow pass",
)
VOCABULARY = ["<pad>", "<unk>", "a", "man", "is", "riding", "horse", "."]


def load_script(app):
    return helpers.load_script(f"applications/{app}/export.py", f"{app}_export")


def write_pair_run(folder, model, max_length):
    folder.mkdir()
    model.save(folder / "model.keras")
    (folder / "vocabulary.txt").write_text("\n".join(VOCABULARY) + "\n")
    (folder / "config.json").write_text(json.dumps({"max_length": max_length}))
    return folder


@TENSORFLOW_ONLY
def test_nli_script_exports_a_run_and_cuts_to_its_max_length(tmp_path):
    model = models.decomposable_attention_model(
        len(VOCABULARY), embedding_dim=4, hidden_dim=4, seed=1
    )
    run = write_pair_run(tmp_path / "run", model, max_length=4)
    path = load_script("nli").main(
        ["--run-dir", str(run), "--export-dir", str(tmp_path / "out")]
    )
    assert path == str(tmp_path / "out" / "1")
    serve = tf.saved_model.load(path).signatures["serving_default"]
    long = "A man is riding a horse ."
    out = serve(premise=tf.constant([long]), hypothesis=tf.constant(["a man"]))
    # Only the first 4 words count (the run's max_length).
    expected = model.predict_on_batch(
        {
            "premise": python_token_ids([long], VOCABULARY, 4),
            "hypothesis": python_token_ids(["a man"], VOCABULARY, 4),
        }
    )
    np.testing.assert_allclose(out["probabilities"], expected, atol=1e-5)


@TENSORFLOW_ONLY
def test_relatedness_script_exports_a_run(tmp_path):
    first = keras.Input((None,), dtype="int32", name="sentence_a")
    second = keras.Input((None,), dtype="int32", name="sentence_b")
    embed = keras.layers.Embedding(len(VOCABULARY), 4)
    pooled = [
        keras.layers.GlobalAveragePooling1D()(embed(x)) for x in (first, second)
    ]
    score = keras.layers.Dense(1, activation="sigmoid")(
        keras.layers.Concatenate()(pooled)
    )
    score = keras.layers.Rescaling(4.0, offset=1.0)(
        keras.layers.Flatten()(score)
    )
    model = keras.Model({"sentence_a": first, "sentence_b": second}, score)
    run = write_pair_run(tmp_path / "run", model, max_length=10)
    path = load_script("relatedness").main(
        [
            "--run-dir",
            str(run),
            "--export-dir",
            str(tmp_path / "out"),
            "--version",
            "3",
        ]
    )
    assert path.endswith("3")
    serve = tf.saved_model.load(path).signatures["serving_default"]
    out = serve(
        sentence_a=tf.constant(["a man"]), sentence_b=tf.constant(["a horse"])
    )
    expected = model.predict_on_batch(
        {
            "sentence_a": python_token_ids(["a man"], VOCABULARY, 10),
            "sentence_b": python_token_ids(["a horse"], VOCABULARY, 10),
        }
    )
    np.testing.assert_allclose(
        out["score"], np.reshape(expected, (-1,)), atol=1e-5
    )


@TENSORFLOW_ONLY
def test_translation_script_exports_a_run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    tokenizer = translation.train_tokenizer(
        ["a man is riding a horse", "ein Mann reitet ein Pferd"] * 8,
        vocabulary_size=24,
        path=str(run / translation.TOKENIZER_FILE),
    )
    model = models.Transformer(
        vocabulary_size=24,
        num_layers=1,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=8,
        max_sequence_length=8,
    )
    model.save(run / "model.keras")
    path = load_script("translation").main(
        ["--run-dir", str(run), "--export-dir", str(tmp_path / "out")]
    )
    serve = tf.saved_model.load(path).signatures["greedy"]
    out = serve(inputs=tf.constant(["a man", ""]))
    assert out["outputs"].numpy()[1] == b""
    expected = decoding.translate(
        model, tokenizer, ["a man"], beam_size=1, batch_size=1
    )
    assert out["outputs"].numpy()[0].decode() == expected[0]


def test_existing_version_is_refused(tmp_path):
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"")
    with pytest.raises(ValueError, match="Received: version=1"):
        export.export_classifier(keras.Model(), tmp_path, vocabulary=VOCABULARY)


@pytest.mark.parametrize("version", [0, -1, "1", 1.5])
def test_bad_version_is_refused(tmp_path, version):
    with pytest.raises(ValueError, match=f"Received: version={version!r}"):
        export.export_regressor("run", tmp_path, version=version)


def test_model_without_tokenizer_or_vocabulary_is_refused(tmp_path):
    with pytest.raises(ValueError, match="Received: tokenizer=None"):
        export.export_translator(keras.Model(), tmp_path)
    with pytest.raises(ValueError, match="Received: vocabulary=None"):
        export.export_classifier(keras.Model(), tmp_path)
    with pytest.raises(ValueError, match="Received: beam_size=0"):
        export.export_translator(keras.Model(), tmp_path, beam_size=0)


@TENSORFLOW_ONLY
def test_run_folder_without_a_model_is_refused(tmp_path):
    with pytest.raises(ValueError, match="No model.keras in the run folder"):
        export.export_classifier(str(tmp_path / "missing"), tmp_path / "out")
