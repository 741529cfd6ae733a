"""The README's Python examples run as written, without a single warning.

The blocks run in order in one namespace (each builds on the previous),
inside `warnings.simplefilter("error")`: a Keras warning such as a mask
destroyed by a sublayer fails the test. The export block runs where the
README says it does (tensorflow and jax); the saved `classifier.keras` is
then reloaded and run, as the README's comment promises, under the same
filter.
"""

import os
import pathlib
import re
import warnings

import keras
import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
# Block index -> backends it runs on (README: "from the tensorflow or jax
# backend (not from torch)").
EXPORT_BLOCK = 2
EXPORT_BACKENDS = ("tensorflow", "jax")
# Deprecation warnings that Keras's own backend code raises on any model
# with the installed numpy and jax (not this package's doing, and hidden
# from users by Python's default filters). Each is matched by its message
# and by Keras's module, so the same warning from our code still fails.
KERAS_DEPRECATIONS = (
    # numpy 2 calling Keras's `__array__`, which lacks `copy=`.
    r"__array__ implementation doesn't accept a copy keyword",
    # keras/src/backend/jax/export.py passing it to jax2tf.
    r"The `native_serialization` parameter is deprecated",
)


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)


def test_the_readme_has_the_blocks_this_test_knows():
    blocks = python_blocks()
    assert len(blocks) == 3, "a README block was added: say where it runs"
    assert "model.export(" in blocks[EXPORT_BLOCK]
    # Where the README says the export block runs.
    assert re.search(
        r"from the tensorflow or jax\s+backend", README.read_text()
    )


def test_readme_examples_run_without_warnings(tmp_path, monkeypatch):
    backend = keras.backend.backend()
    monkeypatch.chdir(tmp_path)  # the examples write files
    namespace = {"__name__": "readme"}
    ran = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for message in KERAS_DEPRECATIONS:
            warnings.filterwarnings(
                "ignore",
                message=message,
                category=DeprecationWarning,
                module=r"keras\.src\.backend\.",
            )
        for index, block in enumerate(python_blocks()):
            if index == EXPORT_BLOCK and backend not in EXPORT_BACKENDS:
                continue
            exec(compile(block, f"README.md block {index}", "exec"), namespace)
            ran.append(index)
        reloaded = keras.saving.load_model("classifier.keras")
        ids = namespace["ids"][:16]
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(reloaded.predict(ids, verbose=0)),
            keras.ops.convert_to_numpy(
                namespace["model"].predict(ids, verbose=0)
            ),
            atol=1e-5,
        )
    expected = [0, 1, 2] if backend in EXPORT_BACKENDS else [0, 1]
    assert ran == expected
    # The example learned its task ("does 7 occur?"), beyond always
    # answering the majority label.
    labels = namespace["labels"]
    majority = max(labels.mean(), 1.0 - labels.mean())
    accuracy = namespace["model"].history.history["val_accuracy"][-1]
    assert accuracy > majority + 0.05, (accuracy, majority)
    if EXPORT_BLOCK in ran:
        assert os.path.isdir(tmp_path / "classifier_savedmodel")
