"""Files saved by release 0.1.0 still load, with unchanged outputs.

The fixtures were written at release 0.1.0 by
`tests/fixtures/release_0_1_0/make_fixtures.py` on tensorflow, before
MultiHeadAttention took Keras's sublayer names and weight-file layout.
"""

import os
import shutil

import keras
import numpy as np
import pytest

from keras_attention import saving

FIXTURES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "fixtures",
    "release_0_1_0",
)


@pytest.fixture(scope="module")
def recorded():
    return np.load(os.path.join(FIXTURES, "outputs.npz"))


def to_numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def test_transformer_loads_unchanged(recorded):
    model = keras.saving.load_model(
        os.path.join(FIXTURES, "transformer.keras"), safe_mode=True
    )
    logits = model(
        {
            "encoder_token_ids": recorded["transformer_source"],
            "decoder_token_ids": recorded["transformer_target"],
        }
    )
    np.testing.assert_allclose(
        to_numpy(logits), recorded["transformer_logits"], atol=1e-5
    )


def test_gated_attention_needs_the_upgrade(tmp_path):
    # The gate projection moved to Keras's path: loading the old file as it
    # is fails loudly, never with silently fresh gate weights.
    with pytest.raises(ValueError, match="gate"):
        keras.saving.load_model(
            os.path.join(FIXTURES, "attention_stack.keras"), safe_mode=True
        )


def test_upgraded_attention_stack_loads_unchanged(tmp_path, recorded):
    upgraded = tmp_path / "attention_stack.keras"
    renamed = saving.upgrade_saved_file(
        os.path.join(FIXTURES, "attention_stack.keras"), upgraded
    )
    assert renamed == 1
    with pytest.warns(DeprecationWarning, match="window_size"):
        model = keras.saving.load_model(upgraded, safe_mode=True)
    # Real tokens only: since 0.2 the Transformer blocks read the Keras mask
    # of the embedding (release 0.1 ignored it inside the blocks), which
    # changes the defined-but-meaningless outputs at padded positions.
    real = recorded["stack_tokens"] != 0
    assert not real.all()
    np.testing.assert_allclose(
        to_numpy(model(recorded["stack_tokens"]))[real],
        recorded["stack_outputs"][real],
        atol=1e-5,
    )
    local = model.get_layer("local")
    assert local.sliding_window == 3  # window_size=2 in the old config
    assert "window_size" not in local.get_config()
    # Upgrading again changes nothing.
    assert saving.upgrade_saved_file(upgraded) == 0


def test_upgrade_of_weights_file_in_place(tmp_path, recorded):
    old = keras.saving.load_model(
        os.path.join(FIXTURES, "transformer.keras"), safe_mode=True
    )
    path = tmp_path / "model.weights.h5"
    old.save_weights(path)
    before = path.read_bytes()
    assert saving.upgrade_saved_file(path) == 0
    old.load_weights(path)
    assert len(path.read_bytes()) == len(before)


def test_upgrade_refuses_other_files(tmp_path):
    other = tmp_path / "model.h5"
    shutil.copyfile(os.path.join(FIXTURES, "outputs.npz"), other)
    with pytest.raises(ValueError, match=r"Received: path=.*model\.h5"):
        saving.upgrade_saved_file(other)


def test_resan_models_load_as_the_release_0_1_variant():
    # Release 0.1's ReSAN files have no `variant`: they load with release
    # 0.1's encoder (shared projection, four ReLU samplers, the "mean"
    # corner rule) and give the recorded outputs.
    recorded = np.load(os.path.join(FIXTURES, "resan_outputs.npz"))
    classifier = keras.saving.load_model(
        os.path.join(FIXTURES, "resan_classifier.keras"), safe_mode=True
    )
    relatedness = keras.saving.load_model(
        os.path.join(FIXTURES, "resan_relatedness.keras"), safe_mode=True
    )
    assert classifier.variant == relatedness.variant == "release_0_1"
    assert relatedness.objective == "kl"
    out = classifier(
        {"premise": recorded["first"], "hypothesis": recorded["second"]}
    )
    np.testing.assert_allclose(
        to_numpy(out["probabilities"]),
        recorded["classifier_probabilities"],
        atol=1e-5,
    )
    out = relatedness(
        {"sentence_a": recorded["first"], "sentence_b": recorded["second"]}
    )
    np.testing.assert_allclose(
        to_numpy(out["score"]), recorded["relatedness_score"], atol=1e-5
    )
