"""Checkpoints and exports are never seen half-written; resumed state is whole.

- `keras_attention.callbacks.ModelCheckpoint` writes through a temporary
  file: a write interrupted mid-file leaves the previous checkpoint whole
  (Keras's own callback, given the same fault, leaves a damaged file).
- Its best value, and other callbacks' state, come back with a backup.
- `keras_attention.data.BucketedBatches` gives each epoch the same order
  whether the stream starts at epoch 0 or is resumed at a later epoch.
- The serving exporters write a version folder through a temporary folder:
  an interrupted save leaves no version folder and no leftovers in sight
  of TensorFlow Serving, and the same version can then be exported.
"""

import os

import h5py
import keras
import numpy as np
import pytest

from keras_attention import callbacks
from keras_attention import models
from keras_attention.data import BucketedBatches


def small_model():
    model = models.bag_of_words_model(
        vocabulary_size=6, embedding_dim=4, hidden_dim=4
    )
    model.compile("adam", "sparse_categorical_crossentropy")
    return model


def fail_mid_write(model, monkeypatch):
    """Makes `save_weights` write part of a file, then raise."""

    def save_weights(path, *args, **kwargs):
        with open(path, "wb") as f:
            f.write(b"\x89HDF\r\n half a file")
        raise RuntimeError("killed mid-write")

    monkeypatch.setattr(model, "save_weights", save_weights)


def test_interrupted_checkpoint_write_leaves_the_previous_file(
    tmp_path, monkeypatch
):
    model = small_model()
    path = tmp_path / "checkpoint.weights.h5"
    checkpoint = callbacks.ModelCheckpoint(str(path), save_weights_only=True)
    checkpoint.set_model(model)
    checkpoint.on_epoch_end(0, {"loss": 1.0})
    saved = path.read_bytes()
    weights = model.get_weights()

    model.set_weights([w + 1.0 for w in weights])
    fail_mid_write(model, monkeypatch)
    with pytest.raises(RuntimeError, match="killed mid-write"):
        checkpoint.on_epoch_end(1, {"loss": 0.5})
    monkeypatch.undo()
    assert path.read_bytes() == saved
    assert sorted(os.listdir(tmp_path)) == ["checkpoint.weights.h5"]
    model.load_weights(path)
    for actual, wanted in zip(model.get_weights(), weights):
        np.testing.assert_array_equal(actual, wanted)


def test_keras_checkpoint_leaves_a_damaged_file_on_the_same_fault(
    tmp_path, monkeypatch
):
    # The fault the callback above guards against.
    model = small_model()
    path = tmp_path / "checkpoint.weights.h5"
    checkpoint = keras.callbacks.ModelCheckpoint(
        str(path), save_weights_only=True
    )
    checkpoint.set_model(model)
    checkpoint.on_epoch_end(0, {"loss": 1.0})
    fail_mid_write(model, monkeypatch)
    with pytest.raises(RuntimeError, match="killed mid-write"):
        checkpoint.on_epoch_end(1, {"loss": 0.5})
    monkeypatch.undo()
    assert not h5py.is_hdf5(path)


def test_checkpoint_writes_whole_model_files_and_formats_names(tmp_path):
    model = small_model()
    checkpoint = callbacks.ModelCheckpoint(
        str(tmp_path / "epoch-{epoch:02d}.keras")
    )
    checkpoint.set_model(model)
    checkpoint.on_epoch_end(2, {"loss": 1.0})
    assert sorted(os.listdir(tmp_path)) == ["epoch-03.keras"]
    loaded = keras.saving.load_model(tmp_path / "epoch-03.keras")
    for actual, wanted in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(actual, wanted)


def test_best_checkpoint_survives_a_restart(tmp_path):
    path = tmp_path / "best.weights.h5"

    def best_checkpoint():
        return callbacks.ModelCheckpoint(
            str(path),
            monitor="val_accuracy",
            mode="max",
            save_best_only=True,
            save_weights_only=True,
        )

    model = small_model()
    checkpoint = best_checkpoint()
    backup = callbacks.BackupAndRestore(
        tmp_path / "backup", stateful_callbacks=[checkpoint]
    )
    for callback in (checkpoint, backup):
        callback.set_model(model)
    checkpoint.on_epoch_end(0, {"val_accuracy": 0.8})
    backup.on_epoch_end(0, {"val_accuracy": 0.8})
    saved = path.read_bytes()

    # A new process: new callbacks, restored from the backup.
    model = small_model()
    checkpoint = best_checkpoint()
    backup = callbacks.BackupAndRestore(
        tmp_path / "backup", stateful_callbacks=[checkpoint]
    )
    assert backup.initial_epoch() == 1
    for callback in (checkpoint, backup):
        callback.set_model(model)
        callback.on_train_begin()
    assert checkpoint.best == pytest.approx(0.8)
    # A worse epoch after the restart keeps the better checkpoint.
    model.set_weights([w + 1.0 for w in model.get_weights()])
    checkpoint.on_epoch_end(1, {"val_accuracy": 0.5})
    assert path.read_bytes() == saved
    checkpoint.on_epoch_end(2, {"val_accuracy": 0.9})
    assert path.read_bytes() != saved


def test_stateful_callbacks_need_get_and_set_state(tmp_path):
    with pytest.raises(ValueError, match="stateful_callbacks entry") as info:
        callbacks.BackupAndRestore(
            tmp_path, stateful_callbacks=[keras.callbacks.History()]
        )
    assert "History" in str(info.value)


def test_a_backup_of_other_callbacks_must_match_them(tmp_path):
    model = small_model()
    checkpoint = callbacks.ModelCheckpoint(
        str(tmp_path / "c.weights.h5"), save_weights_only=True
    )
    backup = callbacks.BackupAndRestore(
        tmp_path / "backup", stateful_callbacks=[checkpoint]
    )
    backup.set_model(model)
    backup.on_epoch_end(0)
    other = callbacks.BackupAndRestore(tmp_path / "backup")
    other.set_model(model)
    with pytest.raises(ValueError, match="state of 1 callbacks but 0"):
        other.on_train_begin()


def test_resumed_stream_gives_each_epoch_its_uninterrupted_order():
    ids = np.arange(1, 41).reshape(10, 4)
    x = {"premise": ids, "hypothesis": ids * 2}
    y = np.arange(10)
    batches = BucketedBatches(x, y, batch_size=4, seed=3)
    steps = len(batches)
    assert steps == 3  # 4 + 4 + 2
    full = iter(batches.as_dataset(epochs=None))
    epochs = [[next(full) for _ in range(steps)] for _ in range(3)]
    orders = [np.concatenate([b[1] for b in epoch]) for epoch in epochs]
    for order in orders:
        # Every row once per epoch, rows of x and y kept together.
        assert sorted(order) == list(range(10))
    for batch_x, batch_y in epochs[0]:
        np.testing.assert_array_equal(batch_x["premise"], ids[batch_y])
        np.testing.assert_array_equal(batch_x["hypothesis"], 2 * ids[batch_y])
    assert not np.array_equal(orders[0], orders[1])
    resumed = iter(batches.as_dataset(epochs=None, initial_epoch=2))
    for _, wanted in epochs[2]:
        np.testing.assert_array_equal(next(resumed)[1], wanted)


def test_stream_start_is_checked():
    batches = BucketedBatches(np.ones((4, 3), "int32"), np.arange(4))
    with pytest.raises(ValueError, match="initial_epoch=-1"):
        batches.as_dataset(initial_epoch=-1)


class Serving:
    """A tiny module with one signature, as the exporters save."""

    def __new__(cls):
        import tensorflow as tf

        class Module(tf.Module):
            @tf.function(
                input_signature=[tf.TensorSpec([None], tf.string)],
                autograph=False,
            )
            def length(self, text):
                return {"length": tf.strings.length(text)}

        return Module()


def test_interrupted_export_leaves_no_version_folder(tmp_path, monkeypatch):
    import tensorflow as tf

    from keras_attention.export import archive

    module = Serving()
    signatures = {"serving_default": module.length.get_concrete_function()}
    save = tf.saved_model.save

    def save_then_fail(obj, folder, signatures=None):
        save(obj, folder, signatures=signatures)
        os.remove(os.path.join(folder, "saved_model.pb"))
        raise RuntimeError("killed mid-export")

    path = archive.version_path(tmp_path, 1)
    monkeypatch.setattr(tf.saved_model, "save", save_then_fail)
    with pytest.raises(RuntimeError, match="killed mid-export"):
        archive.save_version(module, path, signatures)
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    # The same version can be written now, and is complete.
    path = archive.save_version(
        module, archive.version_path(tmp_path, 1), signatures
    )
    assert sorted(os.listdir(tmp_path)) == ["1"]
    assert os.path.isfile(os.path.join(path, "saved_model.pb"))
    loaded = tf.saved_model.load(path)
    result = loaded.signatures["serving_default"](tf.constant(["abc", ""]))
    np.testing.assert_array_equal(result["length"].numpy(), [3, 0])
