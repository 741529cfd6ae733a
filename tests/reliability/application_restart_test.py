"""Each application's train.py, killed mid-epoch, resumes to the same model.

Every application's `train.py` is run, in small settings with a fixed seed,
in three fresh processes:

1. uninterrupted, to the end;
2. killed with SIGKILL at a fixed optimizer step in the middle of its
   second epoch;
3. started again with the exact command (and output folder) of run 2.

Run 3 must resume from the backup of run 2 (the end of epoch 1), finish
with the optimizer step count of run 1, and write a `model.keras` whose
weights and optimizer state match run 1's within 1e-6. The NLI and
relatedness runs keep the best dev checkpoint, so this also checks that
the best score seen before the kill survives it, and all three check that
each epoch's batches come in the order of an uninterrupted run.

The kill comes from a wrapper that runs the unmodified script with
`runpy` and adds one callback to `keras.Model.fit` when
`KILL_AT_STEP` is set: all three runs use the same command line, and the
applications carry no test code.
"""

import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import zipfile

import h5py
import helpers
import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()
ROOT = pathlib.Path(__file__).resolve().parents[2]

WRAPPER = r"""
import os, runpy, signal, sys
import keras

kill_at_step = int(os.environ.get("KILL_AT_STEP", "0"))


class KillAtStep(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        iterations = self.model.optimizer.iterations
        if int(keras.ops.convert_to_numpy(iterations)) == kill_at_step:
            os.kill(os.getpid(), signal.SIGKILL)


fit = keras.Model.fit


def fit_then_maybe_kill(self, *args, **kwargs):
    if kill_at_step:
        kwargs["callbacks"] = list(kwargs.get("callbacks") or [])
        kwargs["callbacks"].append(KillAtStep())
    history = fit(self, *args, **kwargs)
    # The optimizer's step count when `fit` returns.
    steps = keras.ops.convert_to_numpy(self.optimizer.iterations)
    with open(os.environ["FIT_STEPS_FILE"], "a") as f:
        f.write(f"{int(steps)}\n")
    return history


keras.Model.fit = fit_then_maybe_kill
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

# name: (flags, epochs, kill step). Small models, a fixed seed. The kill
# step is the 2nd (translation: 4 steps per epoch) or 2nd or 3rd (NLI,
# relatedness: 64 pairs in batches of 8, 8 or 9 steps per epoch) step of
# epoch 2; the test checks that the killed run's last backup is epoch 1's.
# NLI and relatedness pad every batch to one width (`--bucket-width 0`;
# the batches are still drawn and shuffled per epoch by `BucketedBatches`):
# one compiled step instead of one per width halves each jax process
# (measured 29 -> 13 s and 49 -> 23 s). Resuming a bucketed stream is
# checked in tests/data/batching_test.py.
# Relatedness trains ReSAN with every piece of the authors' training that
# carries state: the samplers' own Adadelta beside Adam (two sets of slots),
# the weights' moving average (its default, 0.997) and the three-phase
# schedule (soft alone to step 14 of 16, the samplers alone at step 15,
# then both), so the resumed run crosses two phase boundaries.
APPLICATIONS = {
    "translation": (
        ["--smoke", "--smoke-steps", "12", "--smoke-epochs", "3"],
        3,
        6,
    ),
    "nli": (
        ["--smoke", "--dataset", "sick", "--epochs", "2", "--batch-size"]
        + ["8", "--hidden-dim", "8", "--verbose", "0", "--bucket-width", "0"],
        2,
        10,
    ),
    "relatedness": (
        ["--smoke", "--epochs", "2", "--batch-size", "8", "--hidden-dim"]
        + ["8", "--verbose", "0", "--bucket-width", "0"]
        + ["--sampler-optimizer", "adadelta"],
        2,
        10,
    ),
}
SEED = ["--seed", "5"]


def start(tmp_path, name, output_dir, kill_at_step=None):
    flags, _, _ = APPLICATIONS[name]
    wrapper = tmp_path / "run_with_kill.py"
    # Written once: rewriting it while an earlier run's interpreter is
    # reading it gave that run an empty script (exit 0, nothing done).
    if not wrapper.exists():
        wrapper.write_text(WRAPPER)
    env = dict(os.environ, KERAS_BACKEND=BACKEND, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["FIT_STEPS_FILE"] = str(output_dir.parent / f"{output_dir.name}.steps")
    env.pop("KILL_AT_STEP", None)
    if kill_at_step:
        env["KILL_AT_STEP"] = str(kill_at_step)
    script = ROOT / "applications" / name / "train.py"
    command = [sys.executable, str(wrapper), str(script)]
    command += flags + SEED + ["--output-dir", str(output_dir)]
    log = open(output_dir.parent / f"{output_dir.name}.log", "w")
    process = subprocess.Popen(
        command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path
    )
    process.log = log
    return process


def finish(process, timeout=600):
    try:
        process.wait(timeout=timeout)
    finally:
        process.log.close()
    text = pathlib.Path(process.log.name).read_text()
    return process.returncode, text[-3000:]


def saved_state(path):
    """`{dataset path: array}` of the weights file inside a `.keras`."""
    with zipfile.ZipFile(path) as archive:
        weights = archive.read("model.weights.h5")
    arrays = {}
    with h5py.File(io.BytesIO(weights), "r") as f:
        f.visititems(
            lambda name, item: (
                arrays.__setitem__(name, item[()])
                if isinstance(item, h5py.Dataset)
                else None
            )
        )
    return arrays


@pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="run on tensorflow (CI time: 235 s on jax); the resume logic "
    "is the applications' own Python and the same on every backend, and "
    "interrupted_training_test.py kills and resumes a dropout model's "
    "random state on jax",
)
@helpers.needs_data("sick/SICK_train.txt", "glove/glove.6B.50d.subset.txt.gz")
def test_killed_applications_resume_to_the_uninterrupted_model(tmp_path):
    names = sorted(APPLICATIONS)
    reference = {n: tmp_path / f"{n}_reference" for n in names}
    resumed = {n: tmp_path / f"{n}_resumed" for n in names}
    kill_steps = {n: APPLICATIONS[n][2] for n in names}
    # The uninterrupted and the killed runs of all three at once.
    runs = {(n, "reference"): start(tmp_path, n, reference[n]) for n in names}
    runs.update(
        {
            (n, "killed"): start(tmp_path, n, resumed[n], kill_steps[n])
            for n in names
        }
    )
    results = {key: finish(process) for key, process in runs.items()}
    metadata = {}
    for name in names:
        code, log = results[name, "reference"]
        assert code == 0, f"{name}: {log}"
        code, log = results[name, "killed"]
        assert code == -signal.SIGKILL, f"{name}: {log}"
        # Killed in epoch 2, before any model was written: the last
        # backup is the end of epoch 1, one weights file, committed.
        assert not (resumed[name] / "model.keras").exists(), name
        backup = resumed[name] / "backup"
        metadata[name] = json.loads(
            (backup / "training_metadata.json").read_text()
        )
        assert metadata[name]["epoch"] == 1, name
        assert sorted(os.listdir(backup)) == [
            metadata[name]["weights"],
            "training_metadata.json",
        ], name

    # The same command again.
    again = {n: start(tmp_path, n, resumed[n]) for n in names}
    for name, process in again.items():
        code, log = finish(process)
        assert code == 0, f"{name}: {log}"
        # Resumed, not restarted: epoch 1 is not trained again.
        if name == "translation":
            assert "Epoch 1/" not in log, log
        # The backup is removed when training ends normally, and no
        # temporary file is left behind.
        assert not (resumed[name] / "backup").exists(), name
        leftovers = [p for p in os.listdir(resumed[name]) if ".tmp-" in p]
        assert not leftovers, (name, leftovers)

    for name in names:
        _, epochs, kill_step = APPLICATIONS[name]
        expected = saved_state(reference[name] / "model.keras")
        actual = saved_state(resumed[name] / "model.keras")
        # Model weights and optimizer state (the NLI and relatedness
        # models are their best dev epoch's).
        assert sorted(actual) == sorted(expected), name
        for key, wanted in expected.items():
            np.testing.assert_allclose(
                actual[key], wanted, rtol=0, atol=1e-6, err_msg=f"{name} {key}"
            )
        # One `fit` per run; the killed run never returned from its `fit`.
        steps = {
            run: (tmp_path / f"{name}_{run}.steps").read_text().split()
            for run in ("reference", "resumed")
        }
        assert len(steps["reference"]) == 1, name
        total = int(steps["reference"][0])
        assert total % epochs == 0 and total > kill_step, (name, total)
        assert steps["resumed"] == steps["reference"], name

    # The NLI run's metrics cover both epochs, the one trained before the
    # kill included, and its training time adds the killed process's.
    reference_metrics, resumed_metrics = (
        json.loads((folder["nli"] / "metrics.json").read_text())
        for folder in (reference, resumed)
    )
    assert resumed_metrics["epochs"] == 2
    np.testing.assert_allclose(
        resumed_metrics["dev_accuracy_by_epoch"],
        reference_metrics["dev_accuracy_by_epoch"],
        atol=1e-6,
    )
    timer_state = metadata["nli"]["callback_states"][1]
    assert (
        timer_state["logged"]["val_accuracy"]
        == (resumed_metrics["dev_accuracy_by_epoch"][:1])
    )
    assert 0 < timer_state["run_seconds"] < resumed_metrics["train_seconds"]
    # So does the relatedness run's (its timer is the second backed-up
    # callback, after the dev correlation tracker).
    relatedness_seconds = json.loads(
        (resumed["relatedness"] / "metrics.json").read_text()
    )["train_seconds"]
    timer_state = metadata["relatedness"]["callback_states"][1]
    assert 0 < timer_state["run_seconds"] < relatedness_seconds
