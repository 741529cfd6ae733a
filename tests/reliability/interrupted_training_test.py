"""A training run killed with SIGKILL resumes from its backup and loses nothing.

For a Transformer with dropout, a small training run with
`keras_attention.callbacks.BackupAndRestore` is run three times in fresh
processes:

1. uninterrupted, to the end;
2. killed with SIGKILL (by itself, at a fixed step in the middle of the
   second epoch, so the kill point is the same on every machine);
3. started again with the same command.

Run 3 must end with the same optimizer step count and the same weights as
run 1. The data order is the same every epoch and the model uses dropout,
so the test also checks that the random seed generators' states come back
with the weights. The decomposable attention model (dropout) and ReSAN
(dropout and token sampling) are killed and resumed through the
applications' own `train.py` in `application_restart_test.py`, with
shuffled batches; the builders for them stay here for the mid-epoch case.

Backups written every few steps restore mid-epoch weights, but training
restarts at the beginning of that epoch (`model.fit` cannot start inside an
epoch): `test_mid_epoch_backup_repeats_steps` records that limit.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()
SUBPROCESS = pytest.mark.skipif(
    BACKEND == "torch",
    reason="run on tensorflow and jax; torch's training is the same Keras "
    "loop and its deterministic ops are covered by determinism_test.py",
)

EPOCHS = 3
STEPS = 6  # per epoch
KILL_STEP = STEPS + 3  # the 4th step of the second epoch (global, 1-based)

SCRIPT = r"""
import json, os, signal, sys
import numpy as np
import keras
from keras_attention import callbacks, models

out, save_freq, kinds = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
kill_step = int(os.environ.get("KILL_STEP", "0"))
save_freq = save_freq if save_freq == "epoch" else int(save_freq)


def build(kind):
    keras.utils.set_random_seed(7)
    rng = np.random.default_rng(7)
    n, length = 4 * __STEPS__, 5
    ids = lambda: rng.integers(1, 12, size=(n, length)).astype("int32")
    if kind == "translation":
        model = models.Transformer(
            vocabulary_size=12, num_layers=1, hidden_dim=8, num_heads=2,
            intermediate_dim=16, max_sequence_length=8, dropout=0.2, seed=3)
        x = {"encoder_token_ids": ids(), "decoder_token_ids": ids()}
        y = ids()
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    elif kind == "nli":
        model = models.decomposable_attention_model(
            vocabulary_size=12, hidden_dim=8, embedding_dim=8, dropout=0.2,
            seed=3)
        x = {"premise": ids(), "hypothesis": ids()}
        y = rng.integers(0, 3, size=(n,)).astype("int32")
        loss = "sparse_categorical_crossentropy"
    else:
        model = models.ReSANRelatedness(
            vocabulary_size=12, hidden_dim=8, embedding_dim=8, dropout=0.2,
            seed=3)
        x = {"sentence_a": ids(), "sentence_b": ids()}
        y = models.relatedness_target(rng.uniform(1, 5, size=(n,)))
        loss = keras.losses.KLDivergence()
    model.compile(keras.optimizers.Adam(1e-2), loss)
    return model, x, y


class Kill(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if step == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)


for kind in kinds:
    folder = os.path.join(out, kind)
    os.makedirs(folder, exist_ok=True)
    model, x, y = build(kind)
    model.fit(
        x, y, batch_size=4, epochs=__EPOCHS__, shuffle=False, verbose=0,
        callbacks=[
            callbacks.BackupAndRestore(
                os.path.join(folder, "backup"), save_freq
            ),
            Kill(),
        ],
    )
    np.savez(os.path.join(folder, "weights.npz"), *model.get_weights())
    steps = keras.ops.convert_to_numpy(model.optimizer.iterations)
    with open(os.path.join(folder, "steps.json"), "w") as f:
        json.dump(int(steps), f)
""".replace("__STEPS__", str(STEPS)).replace("__EPOCHS__", str(EPOCHS))

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The other two models are resumed in application_restart_test.py.
KINDS = ["translation"]


def train(tmp_path, kinds, out, save_freq="epoch", kill_step=None):
    script = tmp_path / "train_small.py"
    script.write_text(SCRIPT)
    out.mkdir(exist_ok=True)
    env = dict(os.environ, KERAS_BACKEND=BACKEND, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.pop("KILL_STEP", None)
    if kill_step:
        env["KILL_STEP"] = str(kill_step)
    return subprocess.run(
        [
            sys.executable,
            str(script),
            str(out),
            str(save_freq),
            ",".join(kinds),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def final_state(folder):
    weights = np.load(folder / "weights.npz")
    steps = json.loads((folder / "steps.json").read_text())
    return [weights[f"arr_{i}"] for i in range(len(weights.files))], steps


def kill_then_resume(tmp_path, kinds, save_freq):
    # One process killed per model; then one process resumes them all.
    out = tmp_path / "killed"
    metadata = {}
    for kind in kinds:
        killed = train(tmp_path, [kind], out, save_freq, kill_step=KILL_STEP)
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
        assert not (out / kind / "weights.npz").exists()
        backup = out / kind / "backup"
        metadata[kind] = json.loads(
            (backup / "training_metadata.json").read_text()
        )
        # One committed weights file, no temporary leftovers.
        assert sorted(os.listdir(backup)) == [
            metadata[kind]["weights"],
            "training_metadata.json",
        ]
    resumed = train(tmp_path, kinds, out, save_freq)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for kind in kinds:
        # The backup folder is removed after a run that ends normally.
        assert not (out / kind / "backup").exists()
    return metadata, {kind: final_state(out / kind) for kind in kinds}


@SUBPROCESS
def test_killed_runs_resume_to_the_uninterrupted_weights(tmp_path):
    reference = tmp_path / "reference"
    done = train(tmp_path, KINDS, reference)
    assert done.returncode == 0, done.stderr[-3000:]
    metadata, resumed = kill_then_resume(tmp_path, KINDS, "epoch")
    for kind in KINDS:
        expected, expected_steps = final_state(reference / kind)
        weights, steps = resumed[kind]
        assert expected_steps == EPOCHS * STEPS
        # Killed in epoch 2: the last backup is the end of epoch 1.
        assert metadata[kind]["epoch"] == 1, kind
        assert metadata[kind]["batch"] == 0, kind
        assert steps == expected_steps, kind
        assert len(weights) == len(expected), kind
        for actual, wanted in zip(weights, expected):
            np.testing.assert_allclose(
                actual, wanted, rtol=0, atol=1e-6, err_msg=kind
            )


@pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="Keras's epoch loop, the same on every backend: checked once "
    "(test time)",
)
def test_mid_epoch_backup_repeats_steps(tmp_path):
    # A backup every 2 steps: the last one before the kill (step 9) is at
    # step 8, in the middle of epoch 2. The resumed run restarts epoch 2
    # from its first batch on the step-8 weights, so it trains 2 steps more
    # than an uninterrupted run.
    metadata, resumed = kill_then_resume(tmp_path, ["nli"], 2)
    assert metadata["nli"]["epoch"] == 1 and metadata["nli"]["batch"] == 2
    assert resumed["nli"][1] == EPOCHS * STEPS + 2


def test_a_failed_write_leaves_the_previous_file(tmp_path):
    from keras_attention.utils import files

    path = tmp_path / "model.keras"
    path.write_text("previous")
    with pytest.raises(RuntimeError, match="killed mid-write"):
        with files.atomic_path(path) as tmp:
            with open(tmp, "w") as f:
                f.write("half a fi")
            raise RuntimeError("killed mid-write")
    assert path.read_text() == "previous"
    assert sorted(os.listdir(tmp_path)) == ["model.keras"]
    with files.atomic_path(path) as tmp:
        # Keras picks the format from the suffix, which the name keeps.
        assert tmp.endswith(".keras")
        with open(tmp, "w") as f:
            f.write("new")
    assert path.read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["model.keras"]


def test_resumes_from_a_backup_written_by_keras(tmp_path):
    from keras_attention import callbacks
    from keras_attention import models

    model = models.bag_of_words_model(
        vocabulary_size=6, embedding_dim=4, hidden_dim=4
    )
    model.compile("adam", "sparse_categorical_crossentropy")
    saved = model.get_weights()
    model.save_weights(tmp_path / "latest.weights.h5")
    (tmp_path / "training_metadata.json").write_text(
        json.dumps({"epoch": 2, "batch": 0})
    )
    model.set_weights([w + 1.0 for w in saved])
    backup = callbacks.BackupAndRestore(tmp_path)
    backup.set_model(model)
    backup.on_train_begin()
    assert model._initial_epoch == 2
    for actual, wanted in zip(model.get_weights(), saved):
        np.testing.assert_array_equal(actual, wanted)
