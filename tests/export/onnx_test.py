"""Forward-pass models export to ONNX with `model.export(format="onnx")`
and onnxruntime gives the Keras outputs.

Where a converter cannot export a model on a backend, the test tries, and
skips with the exact error only when it is the known one (so a release
that fixes it turns the skip into a real check). `docs/export.md` has the
table of models, formats and backends these tests back.
"""

import helpers
import pytest

onnxruntime = pytest.importorskip("onnxruntime")
forward = helpers.load_script("tests/export/forward_models.py")

# Errors seen with keras 3.15.1, tf2onnx 1.17, torch 2.13, jax 0.10.2 and
# jax2onnx 0.17.
JAX_ARANGE = "Error interpreting argument to jax.numpy.arange"
TORCH_SORT = "ONNX export of operator Sort, Out parameter is not supported"
KNOWN_ERRORS = {
    ("transformer_encoder", "torch"): "because it is not constant",
    ("resan_classifier", "jax"): JAX_ARANGE,
    ("resan_classifier", "torch"): TORCH_SORT,
    ("resan_relatedness", "jax"): JAX_ARANGE,
    ("resan_relatedness", "torch"): TORCH_SORT,
}


@pytest.mark.parametrize("name", sorted(forward.MODELS))
def test_onnx_matches_keras(name, tmp_path):
    model, inputs = forward.MODELS[name]()
    expected = forward.keras_outputs(model, inputs)
    known = KNOWN_ERRORS.get((name, forward.BACKEND))
    path = tmp_path / f"{name}.onnx"
    forward.export_or_skip(model, path, "onnx", known)
    session = onnxruntime.InferenceSession(str(path))
    names = [i.name for i in session.get_inputs()]
    try:
        outputs = session.run(None, forward.feed(names, inputs))
    except ValueError as error:
        forward.skip_if_known(error, known, "onnxruntime")
        raise
    actual = dict(zip([o.name for o in session.get_outputs()], outputs))
    forward.assert_outputs_match(actual, expected)


def test_encoder_onnx_with_a_fixed_shape_matches_keras(tmp_path):
    # On torch, Keras exports dynamic shapes with torch's TorchScript
    # exporter, which fails on the encoder (KNOWN_ERRORS), and a fixed
    # shape with its dynamo exporter, which succeeds.
    if forward.BACKEND != "torch":
        pytest.skip("test_onnx_matches_keras exports dynamic shapes here")
    model, inputs = forward.transformer_encoder()
    expected = forward.keras_outputs(model, inputs)
    path = tmp_path / "encoder.onnx"
    signature = forward.fixed_signature(inputs)
    model.export(
        str(path), format="onnx", input_signature=signature, verbose=False
    )
    session = onnxruntime.InferenceSession(str(path))
    assert [i.shape for i in session.get_inputs()] == [[2, 4]]
    (actual,) = session.run(None, inputs)
    forward.assert_outputs_match({"output": actual}, expected)
