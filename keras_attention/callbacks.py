"""Training callbacks: a time limit, crash-safe checkpoints and backups.

Averaging saved checkpoints is in `keras_attention.checkpoints`.
"""

import json
import os
import shutil
import time

import keras
import numpy as np

from keras_attention.utils.files import atomic_path
from keras_attention.utils.files import atomic_save
from keras_attention.utils.files import atomic_write_text
from keras_attention.utils.validation import check_positive_int

__all__ = [
    "BackupAndRestore",
    "ModelCheckpoint",
    "TimeLimit",
]


class TimeLimit(keras.callbacks.Callback):
    """Stops training once `seconds` of wall-clock time have passed.

    Checked after every batch, so a run ends within one step of the limit.

    Args:
        seconds: float. Training time budget.
    """

    def __init__(self, seconds):
        super().__init__()
        if seconds <= 0:
            raise ValueError(
                f"Argument `seconds` must be positive. Received: "
                f"seconds={seconds!r}"
            )
        self.seconds = seconds
        self.start = None
        self.stopped_early = False

    def on_train_begin(self, logs=None):
        self.start = time.monotonic()

    def on_train_batch_end(self, batch, logs=None):
        if time.monotonic() - self.start > self.seconds:
            self.model.stop_training = True
            self.stopped_early = True


class BackupAndRestore(keras.callbacks.Callback):
    """Backs up training state and resumes from it; crash-safe writes.

    Like `keras.callbacks.BackupAndRestore` (same arguments and folder),
    but a kill at any moment leaves a consistent backup: each backup's
    weights go to a new file `backup-<n>.weights.h5` (written under a
    temporary name and renamed), then `training_metadata.json` is replaced
    atomically to point at it (the single commit point), then the previous
    weights file is deleted. Keras's callback overwrites
    `latest.weights.h5` in place, so a kill during that write leaves a
    truncated file that the next run fails to load, and a kill between the
    weights and the metadata pairs new weights with an old epoch.

    The model's weights, the optimizer's state (including its iteration
    count) and the states of the model's random seed generators (dropout,
    sampling; `save_weights` leaves these out) are restored, so a resumed
    run draws the same random numbers as an uninterrupted one. Training
    resumes at the start of the epoch after the last completed one.

    Mid-epoch backups (`save_freq=<steps>`) restore the weights of that
    step but, as in Keras, training restarts at the beginning of that
    epoch: `model.fit` cannot start inside an epoch, so the resumed run
    trains those steps again on already-updated weights and does not end
    with the weights of an uninterrupted run. Use epoch backups when
    resumed runs must match uninterrupted ones exactly.

    Other callbacks that keep state across epochs (the best value seen by
    `ModelCheckpoint(save_best_only=True)`, a history of dev scores) are
    backed up with the model when given as `stateful_callbacks`: each needs
    `get_state()`, returning a JSON-serializable dict, and
    `set_state(state)`. List them before this callback in
    `fit(callbacks=...)`, so that their end-of-epoch updates are in the
    backup and their own `on_train_begin` runs before the restore.

    Args:
        backup_dir: str. Folder of the backup.
        save_freq: `"epoch"` or int (a backup every that many steps, and
            none at epoch ends). Defaults to `"epoch"`.
        delete_checkpoint: bool. Delete the folder when training ends
            normally. Defaults to `True`.
        stateful_callbacks: list of callbacks whose state is backed up and
            restored with the model. Defaults to `None`.
    """

    METADATA = "training_metadata.json"

    def __init__(
        self,
        backup_dir,
        save_freq="epoch",
        delete_checkpoint=True,
        stateful_callbacks=None,
    ):
        super().__init__()
        if not backup_dir:
            raise ValueError(
                "Argument `backup_dir` must be a folder path. "
                f"Received: backup_dir={backup_dir!r}"
            )
        if save_freq != "epoch":
            check_positive_int("save_freq", save_freq)
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self.stateful_callbacks = list(stateful_callbacks or [])
        for callback in self.stateful_callbacks:
            if not (
                callable(getattr(callback, "get_state", None))
                and callable(getattr(callback, "set_state", None))
            ):
                raise ValueError(
                    "Every entry of `stateful_callbacks` needs `get_state()` "
                    "and `set_state(state)` methods. Received: "
                    f"stateful_callbacks entry {callback!r}"
                )
        self._epoch = 0
        self._steps_since_save = 0
        self._count = 0

    def on_train_begin(self, logs=None):
        metadata = self.read_metadata()
        if metadata is None:
            return
        if self.model.optimizer is not None and not self.model.optimizer.built:
            self.model.optimizer.build(self.model.trainable_variables)
        # A folder written by Keras's callback names no weights file.
        weights = metadata.get("weights", "latest.weights.h5")
        self.model.load_weights(os.path.join(self.backup_dir, weights))
        self._count = metadata.get("count", 0)
        # By position: automatic names ("seed_generator_3") depend on what
        # else the process built before the model.
        # Keras's callback stores none: its folders restore weights only.
        states = metadata.get("seed_states")
        variables = _seed_states(self.model) if states is not None else []
        if states is not None and len(states) != len(variables):
            raise ValueError(
                f"The backup in '{self.backup_dir}' holds {len(states)} "
                f"random seed states but the model has {len(variables)}: "
                "it was written by a different model. Received: "
                f"backup_dir={self.backup_dir!r}"
            )
        for variable, state in zip(variables, states or []):
            variable.assign(np.asarray(state, variable.dtype))
        callback_states = metadata.get("callback_states")
        if callback_states is not None:
            if len(callback_states) != len(self.stateful_callbacks):
                raise ValueError(
                    f"The backup in '{self.backup_dir}' holds the state of "
                    f"{len(callback_states)} callbacks but "
                    f"{len(self.stateful_callbacks)} were given. Received: "
                    f"stateful_callbacks={self.stateful_callbacks!r}"
                )
            for callback, state in zip(
                self.stateful_callbacks, callback_states
            ):
                callback.set_state(state)
        # `fit` starts at this epoch (the attribute Keras's callback sets).
        self.model._initial_epoch = metadata["epoch"]

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        self._steps_since_save += 1
        if self._steps_since_save >= self.save_freq:
            self._steps_since_save = 0
            self._save(epoch=self._epoch, batch=batch + 1)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch=epoch + 1, batch=0)

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and os.path.isdir(self.backup_dir):
            shutil.rmtree(self.backup_dir)

    def initial_epoch(self):
        """The epoch a run started now begins at: the backup's, else 0.

        Read it before `fit` to start a data stream where the backup left
        off (see `keras_attention.data.BucketedBatches.as_dataset`).
        """
        metadata = self.read_metadata()
        return 0 if metadata is None else int(metadata["epoch"])

    def read_metadata(self):
        """The last committed backup's metadata dict, or `None`."""
        path = os.path.join(self.backup_dir, self.METADATA)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def _save(self, epoch, batch):
        os.makedirs(self.backup_dir, exist_ok=True)
        previous = self.read_metadata()
        self._count += 1
        name = f"backup-{self._count}.weights.h5"
        with atomic_path(os.path.join(self.backup_dir, name)) as tmp:
            self.model.save_weights(tmp)
        metadata = {
            "epoch": epoch,
            "batch": batch,
            "weights": name,
            "count": self._count,
            "seed_states": [
                np.asarray(keras.ops.convert_to_numpy(v)).tolist()
                for v in _seed_states(self.model)
            ],
            "callback_states": [
                callback.get_state() for callback in self.stateful_callbacks
            ],
        }
        atomic_write_text(
            os.path.join(self.backup_dir, self.METADATA), json.dumps(metadata)
        )
        if previous is not None and previous.get("weights") != name:
            old = os.path.join(
                self.backup_dir, previous.get("weights", "latest.weights.h5")
            )
            if os.path.isfile(old):
                os.remove(old)


class ModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """`keras.callbacks.ModelCheckpoint` that never leaves a half-written file.

    Same arguments and behaviour as Keras's callback, but each file is
    written under a temporary name in its folder and renamed over the final
    name (`keras_attention.utils.files.atomic_path`). Keras's callback
    writes in place (`overwrite=True`), so a run killed during the write of
    `checkpoint.weights.h5` leaves a truncated file, and a later run that
    loads "the best checkpoint" fails or, worse, reads the half-written
    one. Here a kill leaves the previous checkpoint whole (and at most a
    stray `.<name>.tmp-*` file that nothing loads).

    With `save_best_only=True` the best value seen so far is the
    callback's state: `get_state()` / `set_state(state)` let
    `BackupAndRestore(stateful_callbacks=[checkpoint])` carry it across an
    interrupted run, so a resumed run does not overwrite a better
    checkpoint with the first epoch it trains.

    Args:
        filepath: str. As in `keras.callbacks.ModelCheckpoint` (ends in
            `.keras`, or `.weights.h5` with `save_weights_only=True`; may
            hold `{epoch}` and log keys).
        **kwargs: the other arguments of `keras.callbacks.ModelCheckpoint`
            (`monitor`, `save_best_only`, `save_weights_only`, `mode`,
            `save_freq`, `initial_value_threshold`, `verbose`).

    Example:

    ```python
    checkpoint = ModelCheckpoint(
        "runs/checkpoint.weights.h5",
        monitor="val_accuracy",
        save_best_only=True,
        save_weights_only=True,
    )
    backup = BackupAndRestore("runs/backup", stateful_callbacks=[checkpoint])
    model.fit(x, y, validation_data=dev, callbacks=[checkpoint, backup])
    ```
    """

    # Replaces the write in Keras's `_save_model` (Keras 3: `_get_file_path`
    # and `_should_save_model` keep their meaning; checkpoint_writes_test.py
    # fails if they change).
    def _save_model(self, epoch, batch, logs):
        filepath = self._get_file_path(epoch, batch, logs)
        if os.path.isdir(filepath):
            raise IOError(
                "ModelCheckpoint needs a file path, not a folder. Received: "
                f"filepath={filepath!r}"
            )
        if not self._should_save_model(epoch, batch, logs, filepath):
            return
        atomic_save(self.model, filepath, weights_only=self.save_weights_only)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saved the model to {filepath}")

    def get_state(self):
        """`{"best": float or None}`, the best monitored value so far."""
        best = self.best
        return {"best": None if best is None else float(best)}

    def set_state(self, state):
        self.best = state["best"]


def _seed_states(model):
    """The state variables of the model's `keras.random.SeedGenerator`s."""
    return [v for v in model.variables if "seed_generator_state" in v.path]
