"""Forward-pass models export to LiteRT (TFLite) with
`model.export(format="litert")` and the LiteRT interpreter gives the Keras
outputs.

Keras converts through TensorFlow's TFLite converter on tensorflow and
through `litert-torch` on torch (with a fixed input shape, which the test
passes); it refuses jax. Where a converter cannot export a model, the test
tries, and skips with the exact error only when it is the known one.
`docs/export.md` has the table of models, formats and backends these tests
back.
"""

import os
import subprocess
import sys

import helpers
import pytest

interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
forward = helpers.load_script("tests/export/forward_models.py")

# Errors seen with keras 3.15.1, tensorflow 2.21, torch 2.13 and
# litert-torch 0.10.
JAX = "LiteRT export requires TensorFlow or PyTorch backend."
# litert-torch's lowering of Keras's integer ops: an int32 tensor reaches
# an op that it typed int64 (the message varies with the op).
TORCH_INT64 = (
    "'func.call' op operand type mismatch",
    "should be of type 'tensor<i32>' but got 'tensor<i64>'",
)
KNOWN_ERRORS = {
    **{(name, "jax"): JAX for name in forward.MODELS},
    ("resan_classifier", "torch"): TORCH_INT64,
    ("resan_relatedness", "torch"): TORCH_INT64,
}


@pytest.mark.parametrize("name", sorted(forward.MODELS))
def test_litert_matches_keras(name, tmp_path):
    model, inputs = forward.MODELS[name]()
    expected = forward.keras_outputs(model, inputs)
    known = KNOWN_ERRORS.get((name, forward.BACKEND))
    options = {}
    if forward.BACKEND == "torch":
        pytest.importorskip("litert_torch")
        # litert-torch exports fixed shapes; Keras would put 1 for `None`.
        options["input_signature"] = forward.fixed_signature(inputs)
    path = tmp_path / f"{name}.tflite"
    forward.export_or_skip(model, path, "litert", known, **options)
    forward.assert_outputs_match(run_litert(path, inputs), expected)


def test_litert_through_a_keras_file_matches_keras(tmp_path):
    # The route where this backend cannot convert: the `.keras` file,
    # loaded on the tensorflow backend, exports there.
    if forward.BACKEND == "tensorflow":
        pytest.skip("test_litert_matches_keras converts on this backend")
    model, inputs = forward.resan_classifier()
    expected = forward.keras_outputs(model, inputs)
    model.save(tmp_path / "model.keras")
    path = tmp_path / "model.tflite"
    subprocess.run(
        [sys.executable, "-c", EXPORT_ON_TENSORFLOW, str(tmp_path), str(path)],
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
        check=True,
        timeout=300,
    )
    forward.assert_outputs_match(run_litert(path, inputs), expected)


EXPORT_ON_TENSORFLOW = """
import sys
import keras
import keras_attention  # registers the models' classes

model = keras.saving.load_model(sys.argv[1] + "/model.keras")
model.export(sys.argv[2], format="litert", verbose=False)
"""


def run_litert(path, inputs):
    """Runs the `.tflite` file's one signature: output name -> array."""
    interpreter = interpreter_module.Interpreter(model_path=str(path))
    ((key, signature),) = interpreter.get_signature_list().items()
    runner = interpreter.get_signature_runner(key)
    return runner(**forward.feed(signature["inputs"], inputs))
