"""Every model the package builds loads safely on every backend.

A tensorflow-backend process builds each model of `keras_attention.models`
(small sizes, fixed seeds), saves it as `.keras` with its outputs on fixed
inputs; this process (any backend) loads each file with
`keras.saving.load_model(path, safe_mode=True)` and no `custom_objects`
and must reproduce the outputs within 1e-5. Safe mode refuses Lambda layers
and pickled code, so a file that loads here holds none.

`tests/cross_backend_test.py` does the same for layers between all pairs
of backends when the suite runs through `tests/run_backends.py`.
"""

import os
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

import keras_attention  # noqa: F401  (registers the serializable classes)

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCRIPT = r"""
import sys
import numpy as np
import keras
from keras_attention import models

out = sys.argv[1]
keras.utils.set_random_seed(5)
ids = np.array([[4, 2, 7, 0, 0], [3, 9, 1, 5, 0]], "int32")
pair = {"premise": ids, "hypothesis": ids[::-1].copy()}
builders = {
    "transformer": (
        lambda: models.Transformer(
            vocabulary_size=12, num_layers=1, hidden_dim=8, num_heads=2,
            intermediate_dim=16, max_sequence_length=8, seed=1),
        {"encoder_token_ids": ids, "decoder_token_ids": ids[:, :4].copy()},
    ),
    "TransformerLanguageModel": (
        lambda: models.TransformerLanguageModel(
            vocabulary_size=12, num_layers=1, hidden_dim=8, num_heads=2,
            intermediate_dim=16, max_sequence_length=8, seed=1),
        ids,
    ),
    "decomposable_attention_model": (
        lambda: models.decomposable_attention_model(
            vocabulary_size=12, embedding_dim=8, hidden_dim=8,
            intra_attention=True, seed=1),
        pair,
    ),
    "bag_of_words_model": (
        lambda: models.bag_of_words_model(
            vocabulary_size=12, embedding_dim=8, hidden_dim=8, seed=1),
        pair,
    ),
    "resan_encoder": (
        lambda: models.resan_encoder(
            vocabulary_size=12, embedding_dim=8, hidden_dim=8, seed=1),
        ids,
    ),
    "ReSANClassifier": (
        lambda: models.ReSANClassifier(
            vocabulary_size=12, embedding_dim=8, hidden_dim=8, seed=1),
        pair,
    ),
    "ReSANRelatedness": (
        lambda: models.ReSANRelatedness(
            vocabulary_size=12, embedding_dim=8, hidden_dim=8, seed=1),
        {"sentence_a": ids, "sentence_b": ids[::-1].copy()},
    ),
}
for name, (build, inputs) in builders.items():
    model = build()
    outputs = model(inputs)
    if isinstance(outputs, dict):
        outputs = [outputs[k] for k in sorted(outputs)]
    elif not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    model.save(f"{out}/{name}.keras")
    arrays = {f"output_{i}": keras.ops.convert_to_numpy(o)
              for i, o in enumerate(outputs)}
    if isinstance(inputs, dict):
        arrays.update({f"input_{k}": v for k, v in inputs.items()})
    else:
        arrays["input"] = inputs
    np.savez(f"{out}/{name}.npz", **arrays)
print("saved", len(builders))
"""

MODELS = [
    "transformer",
    "TransformerLanguageModel",
    "decomposable_attention_model",
    "bag_of_words_model",
    "resan_encoder",
    "ReSANClassifier",
    "ReSANRelatedness",
]


@pytest.fixture(scope="module")
def saved_on_tensorflow(tmp_path_factory):
    folder = tmp_path_factory.mktemp("saved_on_tensorflow")
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


def test_every_model_builder_is_covered():
    from keras_attention import models

    builders = {
        name
        for name in models.__all__
        if name != "relatedness_target"  # a target helper, not a model
    }
    assert builders == {
        "Transformer" if m == "transformer" else m for m in MODELS
    }


@pytest.mark.parametrize("name", MODELS)
def test_tensorflow_model_loads_safely_with_identical_outputs(
    saved_on_tensorflow, name
):
    stored = np.load(saved_on_tensorflow / f"{name}.npz")
    model = keras.saving.load_model(
        saved_on_tensorflow / f"{name}.keras", safe_mode=True
    )
    inputs = {
        key[len("input_") :]: stored[key]
        for key in stored.files
        if key.startswith("input_")
    } or stored["input"]
    outputs = model(inputs)
    if isinstance(outputs, dict):
        outputs = [outputs[k] for k in sorted(outputs)]
    elif not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    expected = [k for k in stored.files if k.startswith("output_")]
    assert len(outputs) == len(expected)
    for index, value in enumerate(outputs):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(value),
            stored[f"output_{index}"],
            atol=1e-5,
            err_msg=f"{name} output {index} on {keras.backend.backend()}",
        )
