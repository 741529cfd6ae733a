"""The README's Python examples run as written, without a single warning.

The first steps' blocks run in order in one namespace (each builds on the
previous),
inside `warnings.simplefilter("error")`: a Keras warning such as a mask
destroyed by a sublayer fails the test. The export block runs where the
README says it does (tensorflow and jax); the saved `classifier.keras` is
then reloaded and run, as the README's comment promises, under the same
filter. The keras-hub snippet runs on its own, once with our import line
and once with keras-hub's: the same code trains and generates on both.
"""

import contextlib
import os
import pathlib
import re
import warnings

import keras
import numpy as np
import pytest

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


# The keras-hub snippet: its import line, and keras-hub's.
OURS = "from keras_attention.compat import keras_hub  # was: import keras_hub"
THEIRS = "import keras_hub"


def all_python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)


def python_blocks():
    """The first steps' blocks, in order (the keras-hub snippet left out)."""
    return [block for block in all_python_blocks() if OURS not in block]


def keras_hub_snippet():
    found = [block for block in all_python_blocks() if OURS in block]
    assert len(found) == 1, "README.md must hold one keras-hub snippet"
    return found[0]


@contextlib.contextmanager
def errors_on_warnings():
    """Every warning an error, but for the deprecations Keras's own backend
    code raises (`KERAS_DEPRECATIONS`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for message in KERAS_DEPRECATIONS:
            warnings.filterwarnings(
                "ignore",
                message=message,
                category=DeprecationWarning,
                module=r"keras\.src\.backend\.",
            )
        yield


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
    with errors_on_warnings():
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


@pytest.mark.parametrize("import_line", [OURS, THEIRS], ids=["ours", "theirs"])
def test_keras_hub_snippet_trains_and_generates(import_line, tmp_path):
    # The same code on our layers and on keras-hub's: only the import line
    # differs.
    code = keras_hub_snippet().replace(OURS, import_line)
    assert code.count(import_line) == 1
    namespace = {"__name__": "readme_snippet"}
    if import_line == OURS:
        # Ours must not warn (keras-hub's own PositionEmbedding drops a
        # Keras mask with a warning, so its run is not held to this).
        with errors_on_warnings():
            exec(compile(code, str(README), "exec"), namespace)
    else:
        exec(compile(code, str(README), "exec"), namespace)
    origin = namespace["keras_hub"].layers.TransformerDecoder.__module__
    expected = "keras_attention" if import_line == OURS else "keras_hub"
    assert origin.startswith(expected), origin
    generated = namespace["generated"][:, :11]
    assert generated.shape == (2, 11)
    np.testing.assert_array_equal(generated[:, :3], [[5, 6, 7], [30, 31, 32]])
    # Training ran and moved the loss down from its first epoch.
    losses = namespace["lm"].history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
