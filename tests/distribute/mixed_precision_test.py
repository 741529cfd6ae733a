"""Every model trains under mixed precision, and XLA does not change a step.

50 steps of Adam on a few fixed batches under `mixed_float16` (with loss
scaling) and `mixed_bfloat16`: every loss is finite and the mean of the
last 5 losses is below the mean of the first 5. One SGD step compiled with
XLA (`jit_compile=True`) and without (`jit_compile=False`) gives the same
weights within 1e-5.

The ReSAN samplers' noise comes from TensorFlow's stateless random ops,
whose XLA kernels draw other numbers than the plain ones for the same seed;
for the XLA comparison `keras.random.uniform` is replaced by the fixed
per-position pattern of `tiny_models.uniform_by_position`, so both steps
select the same tokens.

Backends, chosen to fit each backend's test budget on a 2-core CPU machine
(a fresh compile per model and policy costs seconds; one ReSAN train step
takes about 9 s of CPU to compile on jax, and float16 arithmetic on a CPU
is slow in torch): tensorflow trains every model under `mixed_float16`
and runs the XLA comparison; torch trains every model under
`mixed_bfloat16`, eagerly; jax runs neither here (its compiled steps are
compared with one device in `replicas_test.py`, and every layer's
`run_layer_test` checks finite outputs under both policies on every
backend). Outside the suite, tensorflow under `mixed_bfloat16`, torch
under `mixed_float16` and jax under both were measured with the same
check (docs/distributed_training.md has the figures).
`jit_compile=True` on torch (`torch.compile`) is skipped, see the test.
torch runs on one intra-op thread here: on a busy 2-core machine its
default thread pool makes these small steps several times slower.
"""

import pathlib

import helpers
import keras
import numpy as np
import pytest

from keras_attention.testing.threads import single_torch_thread
from keras_attention.training import precision

HERE = pathlib.Path(__file__).parent
tiny_models = helpers.load_script(HERE / "tiny_models.py", "tiny_models")

STEPS = 50
JIT_TOLERANCE = 1e-5
# The policies each backend trains under (see the module docstring).
PRECISIONS = {"tensorflow": ("float16",), "torch": ("bfloat16",)}


@pytest.fixture
def policy():
    """Sets a global dtype policy for one test and restores float32."""
    yield precision.set_mixed_precision
    precision.set_mixed_precision("none")


def losses_over_steps(name, steps=STEPS):
    model, loss = tiny_models.tiny_model(name)
    model.compile(
        optimizer=precision.loss_scaled(keras.optimizers.Adam(1e-2)),
        loss=loss,
    )
    batches = [tiny_models.batch(name, size=8, seed=s) for s in range(3)]
    history = []
    for step in range(steps):
        x, y = batches[step % len(batches)]
        # A dict: ReSAN also reports its selection percentage.
        logs = model.train_on_batch(x, y, return_dict=True)
        history.append(float(logs["loss"]))
    return model, np.array(history)


@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", tiny_models.MODELS)
def test_mixed_precision_training_is_finite_and_the_loss_falls(
    name, precision, policy
):
    if precision not in PRECISIONS.get(keras.backend.backend(), ()):
        where = [b for b, names in PRECISIONS.items() if precision in names]
        pytest.skip(
            f"{precision} training runs on {where}: one compile per model "
            "and policy exceeds this backend's test budget"
        )
    policy(precision)
    with single_torch_thread():
        model, history = losses_over_steps(name)
    assert model.compute_dtype == precision
    if precision == "float16":
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert np.all(np.isfinite(history)), history
    first, last = history[:5].mean(), history[-5:].mean()
    assert last < first, (first, last, history)
    for weight in model.trainable_weights:
        assert np.all(np.isfinite(keras.ops.convert_to_numpy(weight)))


@pytest.mark.parametrize("name", tiny_models.MODELS)
def test_compiled_and_uncompiled_steps_agree(name, monkeypatch):
    backend = keras.backend.backend()
    if backend == "jax":
        pytest.skip("uncompiled jax steps exceed the budget; see module doc")
    if backend == "torch":
        pytest.skip(
            "torch.compile of one train step of the smallest model here "
            "took 154 s on this 2-core machine, over this backend's test "
            "budget; Keras runs torch eagerly by default"
        )
    monkeypatch.setattr(
        keras.random, "uniform", tiny_models.uniform_by_position
    )
    updated = {}
    for jit_compile in (True, False):
        model, loss = tiny_models.tiny_model(name)
        model.compile(
            optimizer=keras.optimizers.SGD(0.5),
            loss=loss,
            jit_compile=jit_compile,
        )
        assert model.jit_compile == jit_compile
        before = [keras.ops.convert_to_numpy(w) for w in model.weights]
        model.train_on_batch(*tiny_models.batch(name))
        after = [keras.ops.convert_to_numpy(w) for w in model.weights]
        updated[jit_compile] = (before, after)
    assert tiny_models.largest_difference(
        updated[True][0], updated[False][0]
    ) == (0.0)
    moved = tiny_models.largest_difference(*updated[False])
    assert moved > 1e-2
    difference = tiny_models.largest_difference(
        updated[True][1], updated[False][1]
    )
    assert difference < JIT_TOLERANCE, difference
