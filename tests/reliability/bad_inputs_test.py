"""A catalogue of bad inputs to the public entry points.

Every row is one wrong argument, shape, rank, dtype or option given to a
public layer, model, loss, schedule, op, data loader, decoding function,
exporter or application flag. Each must be answered by the named exception
type with a message that names the argument and contains the received
value, never by a backend traceback.
"""

import collections
import pathlib

import helpers
import keras
import numpy as np
import pytest

from keras_attention import data
from keras_attention import decoding
from keras_attention import layers
from keras_attention import losses
from keras_attention import models
from keras_attention import ops
from keras_attention import schedules
from keras_attention.data import resolver
from keras_attention.data import translation

ROOT = pathlib.Path(__file__).resolve().parents[2]
APPLICATIONS = ROOT / "applications"

Case = collections.namedtuple("Case", ["call", "error", "argument", "value"])


def random(*shape):
    return np.random.default_rng(0).normal(size=shape).astype("float32")


X = random(2, 5, 8)
SHORT_MASK = np.ones((2, 4), bool)


def mha(*args, **kwargs):
    return layers.MultiHeadAttention(2, 4)(*args, **kwargs)


def built_mha_then(query, value):
    layer = layers.MultiHeadAttention(2, 4)
    layer(X, X)
    return layer(query, value)


def decoder_block_built(with_encoder):
    block = layers.TransformerDecoderBlock(num_heads=2, intermediate_dim=16)
    if with_encoder:
        block(X, X)
    else:
        block(X)
    return block


def small_transformer(**overrides):
    config = dict(
        vocabulary_size=12,
        num_layers=1,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=8,
        max_sequence_length=8,
    )
    config.update(overrides)
    return models.Transformer(**config)


_TRANSFORMER = []


def shared_transformer():
    if not _TRANSFORMER:
        _TRANSFORMER.append(small_transformer())
    return _TRANSFORMER[0]


def small_language_model(**overrides):
    config = dict(
        vocabulary_size=12,
        num_layers=1,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=8,
        max_sequence_length=8,
    )
    config.update(overrides)
    return models.TransformerLanguageModel(**config)


def load_app(name):
    return helpers.load_script(
        APPLICATIONS / name / "train.py", f"{name}_train_flags"
    )


def app_flags(name, argv):
    def call():
        module = load_app(name)
        module.parse_args(argv)

    return call


def export(function_name, *args, **kwargs):
    def call():
        from keras_attention import export as export_package

        getattr(export_package, function_name)(*args, **kwargs)

    return call


def tiny_classifier():
    return models.bag_of_words_model(vocabulary_size=6, hidden_dim=4)


CASES = {
    # --- layers: constructor options ---
    "mha_num_heads_zero": Case(
        lambda: layers.MultiHeadAttention(0, 4),
        ValueError,
        "num_heads",
        "num_heads=0",
    ),
    "mha_dropout_one": Case(
        lambda: layers.MultiHeadAttention(2, 4, dropout=1.0),
        ValueError,
        "dropout",
        "dropout=1.0",
    ),
    "mha_key_dim_float": Case(
        lambda: layers.MultiHeadAttention(2, 4.5),
        ValueError,
        "key_dim",
        "key_dim=4.5",
    ),
    "disa_direction_unknown": Case(
        lambda: layers.DirectionalSelfAttention(direction="up"),
        ValueError,
        "direction",
        "direction='up'",
    ),
    "source2token_hidden_dim_zero": Case(
        lambda: layers.Source2TokenAttention(hidden_dim=0),
        ValueError,
        "hidden_dim",
        "hidden_dim=0",
    ),
    "resa_capacity_zero": Case(
        lambda: layers.ReinforcedSelfAttention(capacity=0),
        ValueError,
        "capacity",
        "capacity=0",
    ),
    "sampler_threshold_above_one": Case(
        lambda: layers.ReinforcedSequenceSampler(threshold=1.5),
        ValueError,
        "threshold",
        "threshold=1.5",
    ),
    "soft_alignment_dropout_above_one": Case(
        lambda: layers.SoftAlignment(dropout=1.5),
        ValueError,
        "dropout",
        "dropout=1.5",
    ),
    "intra_max_distance_zero": Case(
        lambda: layers.IntraSentenceAttention(max_distance=0),
        ValueError,
        "max_distance",
        "max_distance=0",
    ),
    "encoder_block_intermediate_dim_zero": Case(
        lambda: layers.TransformerEncoderBlock(num_heads=2, intermediate_dim=0),
        ValueError,
        "intermediate_dim",
        "intermediate_dim=0",
    ),
    "token_embedding_position_unknown": Case(
        lambda: layers.TokenAndPositionEmbedding(
            10, embedding_dim=8, position="rotary"
        ),
        ValueError,
        "position",
        "position='rotary'",
    ),
    "position_embedding_length_zero": Case(
        lambda: layers.PositionEmbedding(sequence_length=0),
        ValueError,
        "sequence_length",
        "sequence_length=0",
    ),
    "sinusoidal_max_wavelength_one": Case(
        lambda: layers.SinusoidalPositionEncoding(max_wavelength=1),
        ValueError,
        "max_wavelength",
        "max_wavelength=1",
    ),
    # --- layers: shapes, ranks and masks at call time ---
    "mha_query_rank_two": Case(
        lambda: mha(X[0], X[0]),
        ValueError,
        "query",
        "(5, 8)",
    ),
    "mha_value_width_changes_after_build": Case(
        lambda: built_mha_then(X, random(2, 5, 6)),
        ValueError,
        "value",
        "(2, 5, 6)",
    ),
    "mha_query_mask_wrong_length": Case(
        lambda: mha(X, X, query_mask=SHORT_MASK),
        ValueError,
        "query_mask",
        "(2, 4)",
    ),
    "mha_value_mask_wrong_length": Case(
        lambda: mha(X, X, value_mask=SHORT_MASK),
        ValueError,
        "value_mask",
        "(2, 4)",
    ),
    "mha_attention_mask_wrong_shape": Case(
        lambda: mha(X, X, attention_mask=np.ones((2, 5, 4), bool)),
        ValueError,
        "attention_mask",
        "(2, 5, 4)",
    ),
    "disa_mask_wrong_length": Case(
        lambda: layers.DirectionalSelfAttention()(X, mask=SHORT_MASK),
        ValueError,
        "mask",
        "(2, 4)",
    ),
    "disa_pairwise_mask_instead_of_tokens": Case(
        lambda: layers.DirectionalSelfAttention()(
            X, mask=np.ones((2, 5, 5), bool)
        ),
        ValueError,
        "mask",
        "(2, 5, 5)",
    ),
    "disa_inputs_rank_two": Case(
        lambda: layers.DirectionalSelfAttention()(X[0]),
        ValueError,
        "inputs",
        "(5, 8)",
    ),
    "source2token_mask_wrong_length": Case(
        lambda: layers.Source2TokenAttention()(X, mask=SHORT_MASK),
        ValueError,
        "mask",
        "(2, 4)",
    ),
    "resa_mask_wrong_length": Case(
        lambda: layers.ReinforcedSelfAttention()(X, mask=SHORT_MASK),
        ValueError,
        "mask",
        "(2, 4)",
    ),
    "sampler_mask_wrong_batch": Case(
        lambda: layers.ReinforcedSequenceSampler()(
            X, mask=np.ones((3, 5), bool)
        ),
        ValueError,
        "mask",
        "(3, 5)",
    ),
    "soft_alignment_premise_mask_wrong_length": Case(
        lambda: layers.SoftAlignment()(X, X, premise_mask=SHORT_MASK),
        ValueError,
        "premise_mask",
        "(2, 4)",
    ),
    "soft_alignment_hypothesis_mask_wrong_length": Case(
        lambda: layers.SoftAlignment()(X, X, hypothesis_mask=SHORT_MASK),
        ValueError,
        "hypothesis_mask",
        "(2, 4)",
    ),
    "soft_alignment_batch_mismatch": Case(
        lambda: layers.SoftAlignment()(X, random(3, 5, 8)),
        ValueError,
        "hypothesis",
        "(3, 5, 8)",
    ),
    "intra_mask_wrong_length": Case(
        lambda: layers.IntraSentenceAttention()(X, mask=SHORT_MASK),
        ValueError,
        "mask",
        "(2, 4)",
    ),
    "encoder_block_padding_mask_wrong_length": Case(
        lambda: layers.TransformerEncoderBlock(
            num_heads=2, intermediate_dim=16
        )(X, padding_mask=SHORT_MASK),
        ValueError,
        "padding_mask",
        "(2, 4)",
    ),
    "encoder_block_heads_do_not_divide_width": Case(
        lambda: layers.TransformerEncoderBlock(
            num_heads=3, intermediate_dim=16
        )(X),
        ValueError,
        "num_heads",
        "num_heads=3",
    ),
    "decoder_block_without_encoder_outputs": Case(
        lambda: decoder_block_built(with_encoder=True)(X),
        ValueError,
        "encoder_outputs",
        "encoder_outputs=None",
    ),
    "decoder_only_block_with_encoder_outputs": Case(
        lambda: decoder_block_built(with_encoder=False)(X, X),
        ValueError,
        "encoder_outputs",
        "(2, 5, 8)",
    ),
    "decoder_block_encoder_padding_mask_wrong_length": Case(
        lambda: layers.TransformerDecoderBlock(
            num_heads=2, intermediate_dim=16
        )(X, X, encoder_padding_mask=SHORT_MASK),
        ValueError,
        "encoder_padding_mask",
        "(2, 4)",
    ),
    "fusion_gate_context_batch_mismatch": Case(
        lambda: layers.FusionGate()(X, random(3, 5, 8)),
        ValueError,
        "context",
        "(3, 5, 8)",
    ),
    "token_embedding_ids_rank_three": Case(
        lambda: layers.TokenAndPositionEmbedding(10, embedding_dim=8)(
            np.ones((2, 5, 1), "int32")
        ),
        ValueError,
        "inputs",
        "(2, 5, 1)",
    ),
    "position_embedding_input_too_long": Case(
        lambda: layers.PositionEmbedding(4)(random(1, 6, 8)),
        ValueError,
        "sequence_length",
        "sequence_length=4",
    ),
    # --- ops ---
    "masked_softmax_mask_not_broadcastable": Case(
        lambda: ops.masked_softmax(random(2, 3), np.ones((2, 4), bool)),
        ValueError,
        "mask",
        "(2, 4)",
    ),
    # --- models ---
    "transformer_width_not_divisible_by_heads": Case(
        lambda: small_transformer(hidden_dim=9),
        ValueError,
        "hidden_dim",
        "hidden_dim=9",
    ),
    "transformer_negative_dropout": Case(
        lambda: small_transformer(dropout=-0.1),
        ValueError,
        "dropout",
        "dropout=-0.1",
    ),
    "transformer_unknown_preset": Case(
        lambda: models.Transformer.from_preset("huge", vocabulary_size=10),
        ValueError,
        "preset",
        "preset='huge'",
    ),
    "language_model_width_not_divisible_by_heads": Case(
        lambda: small_language_model(hidden_dim=9),
        ValueError,
        "hidden_dim",
        "hidden_dim=9",
    ),
    "transformer_missing_decoder_input": Case(
        lambda: shared_transformer()(
            {"encoder_token_ids": np.ones((2, 5), "int32")}
        ),
        ValueError,
        "decoder_token_ids",
        "['encoder_token_ids']",
    ),
    "decomposable_max_distance_zero": Case(
        lambda: models.decomposable_attention_model(
            vocabulary_size=10, max_distance=0
        ),
        ValueError,
        "max_distance",
        "max_distance=0",
    ),
    "decomposable_embeddings_wrong_rows": Case(
        lambda: models.decomposable_attention_model(
            vocabulary_size=10, embeddings=np.zeros((5, 3), "float32")
        ),
        ValueError,
        "embeddings",
        "(5, 3)",
    ),
    "bag_of_words_hidden_dim_zero": Case(
        lambda: models.bag_of_words_model(vocabulary_size=10, hidden_dim=0),
        ValueError,
        "hidden_dim",
        "hidden_dim=0",
    ),
    "resan_classifier_num_classes_zero": Case(
        lambda: models.ReSANClassifier(vocabulary_size=10, num_classes=0),
        ValueError,
        "num_classes",
        "num_classes=0",
    ),
    "resan_relatedness_dropout_above_one": Case(
        lambda: models.ReSANRelatedness(vocabulary_size=10, dropout=1.5),
        ValueError,
        "dropout",
        "dropout=1.5",
    ),
    "resan_encoder_embeddings_wrong_rows": Case(
        lambda: models.resan_encoder(
            vocabulary_size=6, embeddings=np.zeros((5, 3))
        ),
        ValueError,
        "embeddings",
        "(5, 3)",
    ),
    "relatedness_target_score_out_of_range": Case(
        lambda: models.relatedness_target([3.0, 5.5]),
        ValueError,
        "scores",
        "5.5",
    ),
    # --- loss and schedule ---
    "loss_epsilon_above_one": Case(
        lambda: losses.LabelSmoothedSparseCategoricalCrossentropy(epsilon=1.5),
        ValueError,
        "epsilon",
        "epsilon=1.5",
    ),
    "loss_probabilities_instead_of_logits": Case(
        lambda: losses.LabelSmoothedSparseCategoricalCrossentropy(
            from_logits=False
        ),
        ValueError,
        "from_logits",
        "from_logits=False",
    ),
    "loss_labels_do_not_match_logits": Case(
        lambda: losses.LabelSmoothedSparseCategoricalCrossentropy()(
            np.ones((2, 3), "int32"), random(2, 4, 5)
        ),
        ValueError,
        "y_true",
        "(2, 3)",
    ),
    "schedule_d_model_zero": Case(
        lambda: schedules.NoamSchedule(0),
        ValueError,
        "d_model",
        "d_model=0",
    ),
    "schedule_warmup_negative": Case(
        lambda: schedules.NoamSchedule(512, warmup_steps=-5),
        ValueError,
        "warmup_steps",
        "warmup_steps=-5",
    ),
    "schedule_scale_zero": Case(
        lambda: schedules.NoamSchedule(512, scale=0),
        ValueError,
        "scale",
        "scale=0",
    ),
    # --- decoding ---
    "beam_search_beam_size_zero": Case(
        lambda: decoding.beam_search(
            shared_transformer(), np.ones((1, 3), "int32"), 2, 3, beam_size=0
        ),
        ValueError,
        "beam_size",
        "beam_size=0",
    ),
    "beam_search_negative_alpha": Case(
        lambda: decoding.beam_search(
            shared_transformer(), np.ones((1, 3), "int32"), 2, 3, alpha=-1
        ),
        ValueError,
        "alpha",
        "alpha=-1",
    ),
    "greedy_search_sources_rank_one": Case(
        lambda: decoding.greedy_search(
            shared_transformer(), np.ones((3,), "int32"), 2, 3
        ),
        ValueError,
        "encoder_token_ids",
        "(3,)",
    ),
    "greedy_search_sources_too_long": Case(
        lambda: decoding.greedy_search(
            shared_transformer(), np.ones((1, 12), "int32"), 2, 3
        ),
        ValueError,
        "encoder_token_ids",
        "(1, 12)",
    ),
    "greedy_search_prompt_leaves_no_room": Case(
        lambda: decoding.greedy_search(
            small_language_model(), np.ones((1, 8), "int32"), 2, 3
        ),
        ValueError,
        "encoder_token_ids",
        "(1, 8)",
    ),
    # --- data loaders ---
    "sick_unknown_split": Case(
        lambda: data.load_sick("foo"),
        ValueError,
        "split",
        "split='foo'",
    ),
    "snli_unknown_source": Case(
        lambda: data.load_snli("dev", source="csv"),
        ValueError,
        "source",
        "source='csv'",
    ),
    "multi30k_unknown_split": Case(
        lambda: data.load_multi30k("validation"),
        ValueError,
        "split",
        "split='validation'",
    ),
    "glove_unknown_oov_mode": Case(
        lambda: data.load_glove(["a"], path="unused.txt", oov="uniform"),
        ValueError,
        "oov",
        "oov='uniform'",
    ),
    "tokenize_not_a_string": Case(
        lambda: data.tokenize(3),
        TypeError,
        "text",
        "text=3",
    ),
    "vocabulary_min_count_zero": Case(
        lambda: data.build_vocabulary(["a"], min_count=0),
        ValueError,
        "min_count",
        "min_count=0",
    ),
    "encode_labels_unknown_label": Case(
        lambda: data.encode_labels(["neutral", "maybe"]),
        ValueError,
        "label",
        "'maybe'",
    ),
    "get_file_path_escapes_data_dir": Case(
        lambda: data.get_file("../secrets.txt", data_dir=ROOT),
        ValueError,
        "relative_path",
        "'../secrets.txt'",
    ),
    "get_data_dir_missing": Case(
        lambda: resolver.get_data_dir(str(ROOT / "no_such_folder")),
        FileNotFoundError,
        "data_dir",
        "no_such_folder",
    ),
    "make_dataset_lengths_differ": Case(
        lambda: translation.make_dataset([[4, 5]], [[4], [5]]),
        ValueError,
        "target",
        "2 targets",
    ),
    # --- application flags (argparse exits with status 2) ---
    "nli_unknown_model": Case(
        app_flags("nli", ["--model", "lstm"]),
        SystemExit,
        "--model",
        "'lstm'",
    ),
    "nli_unknown_dataset": Case(
        app_flags("nli", ["--dataset", "mnli"]),
        SystemExit,
        "--dataset",
        "'mnli'",
    ),
    "nli_intra_without_decomposable": Case(
        app_flags("nli", ["--model", "bow", "--intra"]),
        SystemExit,
        "--model",
        "bow",
    ),
    "nli_batch_size_not_an_int": Case(
        app_flags("nli", ["--batch-size", "many"]),
        SystemExit,
        "--batch-size",
        "'many'",
    ),
    "relatedness_unknown_model": Case(
        app_flags("relatedness", ["--model", "lstm"]),
        SystemExit,
        "--model",
        "'lstm'",
    ),
    "relatedness_dropout_not_a_number": Case(
        app_flags("relatedness", ["--dropout", "high"]),
        SystemExit,
        "--dropout",
        "'high'",
    ),
    "translation_epochs_not_an_int": Case(
        app_flags("translation", ["--epochs", "ten"]),
        SystemExit,
        "--epochs",
        "'ten'",
    ),
    "translation_smoke_steps_not_an_int": Case(
        app_flags("translation", ["--smoke-steps", "1.5"]),
        SystemExit,
        "--smoke-steps",
        "'1.5'",
    ),
    # --- serving exports ---
    "export_translator_beam_size_zero": Case(
        export("export_translator", "run", "out", beam_size=0),
        ValueError,
        "beam_size",
        "beam_size=0",
    ),
    "export_translator_max_extra_length_zero": Case(
        export("export_translator", "run", "out", max_extra_length=0),
        ValueError,
        "max_extra_length",
        "max_extra_length=0",
    ),
    "export_classifier_version_zero": Case(
        export("export_classifier", "run", "out", version=0),
        ValueError,
        "version",
        "version=0",
    ),
    "export_regressor_max_length_zero": Case(
        export("export_regressor", "run", "out", max_length=0),
        ValueError,
        "max_length",
        "max_length=0",
    ),
    "export_classifier_model_without_vocabulary": Case(
        lambda: export("export_classifier", tiny_classifier(), "out")(),
        ValueError,
        "vocabulary",
        "vocabulary=None",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_gets_a_clear_error(name, capsys, tmp_path, monkeypatch):
    call, error, argument, value = CASES[name]
    # Relative paths (export folders, data files) land in tmp_path.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(resolver.ENV_VAR, raising=False)
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    if error is SystemExit:
        # argparse prints its message to stderr and exits with status 2.
        assert info.value.code == 2
        message = capsys.readouterr().err
    assert argument in message, message
    assert value in message, message
    assert "Traceback" not in message


# --- serving signatures ---
# Calls to the `serving_default` signature of an exported NLI classifier
# (inputs `premise`, `hypothesis`: `tf.string`, `[None]`), loaded with
# `tf.saved_model.load`. Each row: keyword inputs (as nested lists and
# dtypes), the exception type's name, and texts the message must hold.
# Wrong dtypes are refused by TensorFlow before any graph op runs: the
# message gives the position of the input in sorted name order
# (`hypothesis` is #0, `premise` #1), the expected and the received dtype,
# and no name; nothing in the SavedModel can change it.
SERVING_CASES = {
    "premise_int": (
        dict(premise=([1, 2], "int32"), hypothesis=(["a", "b"], "string")),
        "InvalidArgumentError",
        ["input #1", "string tensor but is a int32 tensor"],
    ),
    "hypothesis_float": (
        dict(premise=(["a"], "string"), hypothesis=([1.5], "float32")),
        "InvalidArgumentError",
        ["input #0", "string tensor but is a float tensor"],
    ),
    "premise_scalar": (
        dict(premise=("a", "string"), hypothesis=(["a"], "string")),
        "InvalidArgumentError",
        ["Input `premise` must be a 1-D batch", "of rank] [0]"],
    ),
    "premise_column": (
        dict(
            premise=([["a"], ["b"]], "string"),
            hypothesis=(["a", "b"], "string"),
        ),
        "InvalidArgumentError",
        ["Input `premise` must be a 1-D batch", "of rank] [2]", "[2 1]"],
    ),
    "hypothesis_column": (
        dict(
            premise=(["a", "b"], "string"),
            hypothesis=([["a"], ["b"]], "string"),
        ),
        "InvalidArgumentError",
        ["Input `hypothesis` must be a 1-D batch", "of rank] [2]", "[2 1]"],
    ),
    "batch_sizes_differ": (
        dict(
            premise=(["a", "b"], "string"),
            hypothesis=(["a", "b", "c"], "string"),
        ),
        "InvalidArgumentError",
        ["`premise` and `hypothesis` must hold the same number", "[2]", "[3]"],
    ),
    "missing_hypothesis": (
        dict(premise=(["a"], "string")),
        "TypeError",
        ["missing a required argument: 'hypothesis'"],
    ),
    "unknown_input_name": (
        dict(
            premise=(["a"], "string"),
            hypothesis=(["a"], "string"),
            sentence=(["a"], "string"),
        ),
        "TypeError",
        ["unexpected keyword argument 'sentence'"],
    ),
}


@pytest.fixture(scope="module")
def serving_signature(tmp_path_factory):
    import tensorflow as tf

    from keras_attention import export as export_package

    folder = tmp_path_factory.mktemp("served")
    path = export_package.export_classifier(
        tiny_classifier(),
        folder,
        vocabulary=["<pad>", "<unk>", "a", "b", "c", "d"],
    )
    # Written through a temporary folder: only the version is left.
    assert sorted(p.name for p in folder.iterdir()) == ["1"]
    loaded = tf.saved_model.load(path)
    # Keep `loaded` alive while the signature is used.
    return loaded, loaded.signatures["serving_default"]


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the exported graph is the same from every backend (jax and "
    "torch export through a tensorflow subprocess); checked once",
)
@pytest.mark.parametrize("name", sorted(SERVING_CASES))
def test_serving_signature_bad_input_gets_a_clear_error(
    name, serving_signature
):
    import tensorflow as tf

    _, signature = serving_signature
    inputs, error, texts = SERVING_CASES[name]
    tensors = {
        key: tf.constant(value, dtype=dtype)
        for key, (value, dtype) in inputs.items()
    }
    with pytest.raises(Exception) as info:
        signature(**tensors)
    assert type(info.value).__name__ == error, repr(info.value)
    message = str(info.value)
    for text in texts:
        assert text in message, message
    # A good call on the same signature still answers.
    answer = signature(
        premise=tf.constant(["a b", ""]), hypothesis=tf.constant(["c", "d"])
    )
    assert tuple(answer["probabilities"].shape) == (2, 3)


def test_catalogue_covers_every_kind_of_entry_point():
    prefixes = collections.Counter(name.split("_")[0] for name in CASES)
    assert len(CASES) >= 40
    for kind in ("mha", "loss", "schedule", "transformer", "nli", "export"):
        assert prefixes[kind] > 0, kind
    assert len({case.call for case in CASES.values()}) == len(CASES)
