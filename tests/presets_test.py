"""Presets in keras-hub's layout: every model round-trips with equal
outputs, its tokenizer comes back, and keras-hub's own presets are refused
with an error that names the folder and what it holds."""

import json
import os

import keras
import numpy as np
import pytest

from keras_attention import data
from keras_attention import models
from keras_attention import presets

PAIR = {
    "premise": np.array([[3, 4, 5, 0], [6, 7, 0, 0]], "int32"),
    "hypothesis": np.array([[5, 6, 0], [8, 9, 10]], "int32"),
}
SENTENCES = {"sentence_a": PAIR["premise"], "sentence_b": PAIR["hypothesis"]}
IDS = np.array([[3, 4, 5, 6], [7, 8, 0, 0]], "int32")
TRANSFORMER = dict(
    vocabulary_size=20,
    num_layers=1,
    hidden_dim=8,
    num_heads=2,
    intermediate_dim=16,
    seed=1,
)
VOCABULARY = ["<pad>", "<unk>", "a", "man", "dog", "runs", "."]

# name: (build, inputs, how to load it back)
MODELS = {
    "transformer": (
        lambda: models.Transformer(**TRANSFORMER),
        {"encoder_token_ids": IDS, "decoder_token_ids": IDS[:, :3]},
        models.Transformer.from_preset,
    ),
    "language_model": (
        lambda: models.TransformerLanguageModel(**TRANSFORMER),
        IDS,
        models.TransformerLanguageModel.from_preset,
    ),
    "resan_classifier": (
        lambda: models.ReSANClassifier(
            vocabulary_size=12, embedding_dim=6, hidden_dim=4, seed=0
        ),
        PAIR,
        models.ReSANClassifier.from_preset,
    ),
    "resan_relatedness": (
        lambda: models.ReSANRelatedness(
            vocabulary_size=12, embedding_dim=6, hidden_dim=4, seed=0
        ),
        SENTENCES,
        models.ReSANRelatedness.from_preset,
    ),
    "decomposable": (
        lambda: models.decomposable_attention_model(
            12, embedding_dim=6, hidden_dim=4, intra_attention=True, seed=0
        ),
        PAIR,
        presets.load_preset,
    ),
    "bag_of_words": (
        lambda: models.bag_of_words_model(
            12, embedding_dim=6, hidden_dim=4, seed=0
        ),
        PAIR,
        presets.load_preset,
    ),
}


def _numpy(outputs):
    if isinstance(outputs, dict):
        return {k: keras.ops.convert_to_numpy(v) for k, v in outputs.items()}
    return {"outputs": keras.ops.convert_to_numpy(outputs)}


def _randomize(model):
    # Fresh layer norms and zero biases would hide a weight that did not
    # load; every weight gets a value of its own.
    rng = np.random.default_rng(3)
    for variable in model.weights:
        if variable.trainable or "moving" in variable.path:
            variable.assign(rng.normal(size=variable.shape).astype("float32"))


def _save(model, directory):
    if isinstance(model, presets.PresetMixin):
        model.save_to_preset(directory)
    else:
        presets.save_to_preset(model, directory)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_round_trip_gives_equal_outputs(name, tmp_path):
    build, inputs, load = MODELS[name]
    model = build()
    _randomize(model)
    presets.set_tokenizer(model, data.WordTokenizer(VOCABULARY, max_length=9))
    _save(model, tmp_path / name)

    # keras-hub's file names, and nothing else at the top.
    assert sorted(os.listdir(tmp_path / name)) == [
        "assets",
        "config.json",
        "metadata.json",
        "model.weights.h5",
        "tokenizer.json",
    ]
    assert os.listdir(tmp_path / name / "assets" / "tokenizer") == [
        "vocabulary.txt"
    ]
    revived = load(str(tmp_path / name))
    assert type(revived) is type(model)
    expected, actual = _numpy(model(inputs)), _numpy(revived(inputs))
    assert sorted(actual) == sorted(expected)
    for key in expected:
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)
    assert revived.tokenizer.get_vocabulary() == VOCABULARY
    assert revived.tokenizer.max_length == 9
    # The tokenizer is not part of the model's layers or weights.
    assert len(revived.weights) == len(model.weights)


def test_load_weights_false_gives_the_architecture(tmp_path):
    model = models.TransformerLanguageModel(**TRANSFORMER)
    _randomize(model)
    model.save_to_preset(tmp_path)
    fresh = models.TransformerLanguageModel.from_preset(
        str(tmp_path), load_weights=False
    )
    assert [w.shape for w in fresh.weights] == [w.shape for w in model.weights]
    assert not np.allclose(
        keras.ops.convert_to_numpy(fresh(IDS)),
        keras.ops.convert_to_numpy(model(IDS)),
    )
    assert fresh.tokenizer is None


def test_constructor_arguments_override_the_saved_ones(tmp_path):
    model = models.TransformerLanguageModel(**TRANSFORMER)
    model.save_to_preset(tmp_path)
    revived = models.TransformerLanguageModel.from_preset(
        str(tmp_path), dropout=0.3, dtype="bfloat16"
    )
    assert revived.dropout == 0.3
    assert revived.compute_dtype == "bfloat16"
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(
            revived.token_embedding.token_embedding.embeddings
        ).astype("float32"),
        keras.ops.convert_to_numpy(
            keras.ops.cast(
                model.token_embedding.token_embedding.embeddings, "bfloat16"
            )
        ).astype("float32"),
    )


def test_config_and_metadata_have_keras_hubs_structure(tmp_path):
    model = models.TransformerLanguageModel(**TRANSFORMER)
    model.save_to_preset(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert set(config) == {"module", "class_name", "config", "registered_name"}
    assert (
        config["registered_name"] == "keras_attention>TransformerLanguageModel"
    )
    assert config["config"]["vocabulary_size"] == 20
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert metadata["keras_version"] == keras.version()
    assert metadata["parameter_count"] == model.count_params()
    assert {"keras_hub_version", "date_saved", "tasks"} <= set(metadata)


def test_architecture_names_keep_working():
    model = models.TransformerLanguageModel.from_preset(
        "tiny", 30, num_layers=1
    )
    assert (model.num_layers, model.hidden_dim) == (1, 128)
    assert model.vocabulary_size == 30
    assert model.tokenizer is None


def test_unknown_preset_names_the_choices_and_the_value(tmp_path):
    with pytest.raises(ValueError, match=r"'tiny'.*Received: preset='tinyy'"):
        models.Transformer.from_preset("tinyy", vocabulary_size=30)
    with pytest.raises(ValueError, match="has no config.json"):
        models.ReSANClassifier.from_preset(str(tmp_path))
    with pytest.raises(ValueError, match="Only local preset directories"):
        presets.load_preset("hf://someone/model")


def test_other_model_class_is_refused(tmp_path):
    models.TransformerLanguageModel(**TRANSFORMER).save_to_preset(tmp_path)
    with pytest.raises(
        ValueError,
        match=r"holds a 'keras_attention>TransformerLanguageModel'.*not a "
        r"Transformer",
    ):
        models.Transformer.from_preset(str(tmp_path))


def test_tokenizer_attribute_is_not_tracked():
    # A Keras layer as tokenizer (as keras-hub's are) stays out of the
    # model's layers and weights on every backend.
    model = models.ReSANRelatedness(
        vocabulary_size=12, embedding_dim=6, hidden_dim=4, seed=0
    )
    count = len(model.weights)
    layer = keras.layers.Dense(3)
    layer.build((None, 2))
    model.tokenizer = layer
    assert model.tokenizer is layer
    assert layer not in model._flatten_layers()
    assert len(model.weights) == count


def test_word_tokenizer_round_trips_text(tmp_path):
    tokenizer = data.WordTokenizer(VOCABULARY)
    ids = tokenizer(["A man runs.", "A cat"])
    np.testing.assert_array_equal(ids, [[2, 3, 5, 6], [2, 1, 0, 0]])
    assert tokenizer.detokenize(ids) == ["a man runs .", "a <unk>"]
    tokenizer.save_assets(tmp_path)
    revived = data.WordTokenizer.from_config(tokenizer.get_config())
    with pytest.raises(ValueError, match="no vocabulary"):
        revived("a man")
    revived.load_assets(tmp_path)
    np.testing.assert_array_equal(revived("a man"), [2, 3])


def test_keras_hub_tokenizer_travels_with_its_assets(tmp_path):
    keras_hub = pytest.importorskip("keras_hub")
    sentencepiece = pytest.importorskip("sentencepiece")
    import io

    proto = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["the quick brown fox", "the lazy dog"] * 20),
        model_writer=proto,
        vocab_size=10,
        model_type="word",
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
    )
    tokenizer = keras_hub.tokenizers.SentencePieceTokenizer(
        proto=proto.getvalue()
    )
    model = models.TransformerLanguageModel(**TRANSFORMER)
    model.tokenizer = tokenizer
    # Untracked: not one of the model's layers.
    assert tokenizer not in model._flatten_layers()
    model.save_to_preset(tmp_path)
    assert os.listdir(tmp_path / "assets" / "tokenizer") == ["vocabulary.spm"]
    revived = models.TransformerLanguageModel.from_preset(str(tmp_path))
    assert isinstance(
        revived.tokenizer, keras_hub.tokenizers.SentencePieceTokenizer
    )
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(revived.tokenizer("the lazy fox")),
        keras.ops.convert_to_numpy(tokenizer("the lazy fox")),
    )
    # keras-hub's serialization of its own tokenizer, as keras-hub writes.
    config = json.loads((tmp_path / "tokenizer.json").read_text())
    assert config["registered_name"] == "keras_hub>SentencePieceTokenizer"
    assert config["config"]["proto"] is None


def test_keras_hub_preset_is_refused_with_what_it_holds(tmp_path):
    keras_hub = pytest.importorskip("keras_hub")
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=20,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=8,
    )
    causal_lm = keras_hub.models.GPT2CausalLM(backbone, preprocessor=None)
    causal_lm.save_to_preset(str(tmp_path))
    assert (tmp_path / "config.json").exists()
    message = (
        rf"preset directory '{tmp_path}' holds a 'keras_hub>GPT2Backbone'.*"
        r"'keras_hub>GPT2CausalLM'.*not a model of keras_attention.*"
        r"keras_hub.models.Backbone.from_preset"
    )
    with pytest.raises(ValueError, match=message):
        models.TransformerLanguageModel.from_preset(str(tmp_path))
    with pytest.raises(ValueError, match=message):
        presets.load_preset(str(tmp_path))
