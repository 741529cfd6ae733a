"""One step on two replicas equals one step on one device.

A global batch of 4 examples, split into two halves of 2 on two CPU
devices, gives the same updated weights (within 1e-5) as the whole batch
on one device, for the Transformer, decomposable attention (with
intra-sentence attention) and ReSAN classifier, after one SGD step with
dropout off (`tiny_models.py` documents the models, the data and how the
ReSAN samplers' randomness is fixed).

- tensorflow: two logical CPU devices and `MirroredStrategy(["CPU:0",
  "CPU:1"])`, in a fresh process (logical devices must be configured
  before TensorFlow starts). This checks that the loss is averaged over
  the global batch: Keras divides compiled losses by the replicas in
  sync, and the ReSAN models' REINFORCE term (added in `compute_loss`)
  must do the same and take its baseline over the global batch.
- jax: `XLA_FLAGS=--xla_force_host_platform_device_count=2` and
  `keras.distribution.DataParallel`, in a fresh process.
- torch: Keras has no multi-device training for torch; skipped.
"""

import json
import os
import pathlib
import subprocess
import sys

import keras
import pytest

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[1]
MODELS = ("transformer", "decomposable", "resan")
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def replica_results(tmp_path_factory):
    """Runs `tiny_models.py` once per module in a fresh process."""
    backend = keras.backend.backend()
    if backend == "torch":
        pytest.skip("Keras offers no multi-device training on torch")
    output = tmp_path_factory.mktemp("replicas") / "results.json"
    env = dict(
        os.environ,
        KERAS_BACKEND=backend,
        TF_CPP_MIN_LOG_LEVEL="2",
        PYTHONPATH=str(ROOT),
    )
    if backend == "jax":
        env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    result = subprocess.run(
        [sys.executable, str(HERE / "tiny_models.py"), str(output)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return json.loads(output.read_text())


@pytest.mark.parametrize("name", MODELS)
def test_two_replicas_match_one_device_after_one_step(name, replica_results):
    result = replica_results[name]
    assert result["replicas"] == 2
    assert result["initial"] == 0.0
    # The step moves the weights far more than the tolerance.
    assert result["moved"] > 1e-2
    assert result["updated"] < TOLERANCE, result


def test_resan_samplers_learn_in_the_compared_step(replica_results):
    # The REINFORCE term reaches the samplers, so the comparison covers it.
    # With the authors' reward (minus the task cost, against the
    # leave-one-out baseline) an untrained model's advantages are small: the
    # samplers moved 4.8e-4 in this step on tensorflow (0/1 correctness
    # rewards moved them over 1e-3), ten times the replicas' tolerance at
    # the least, so a step that left them in place would fail here.
    assert replica_results["resan"]["sampler_moved"] > 10 * TOLERANCE


def test_idle_groups_skip_their_steps_on_two_devices(replica_results):
    # Soft network alone, samplers alone, both: under `tf.distribute` the
    # idle group's state is put back on every device; on jax inside the
    # sharded step. Each group's Adam took 2 of the 3 steps.
    phases = replica_results["resan_phases"]
    assert phases["moves"] == [[False, True], [True, False], [True, True]]
    assert (phases["soft_iterations"], phases["sampler_iterations"]) == (2, 2)


def test_batches_divide_among_the_devices_on_jax(replica_results):
    if keras.backend.backend() != "jax":
        pytest.skip("tf.distribute splits uneven batches itself")
    helpers = replica_results["batch_helpers"]
    assert helpers["batch_multiple"] == 2
    assert helpers["trimmed_rows"] == 4  # 5 rows -> 4
    assert helpers["batch_sizes"] == [2, 2]  # batches of 3 and 2
    assert "Received: batch_size=3" in helpers["odd_batch_error"]
