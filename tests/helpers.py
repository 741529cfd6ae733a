"""Test helpers shared across test files: scripts loaded by path, data."""

import importlib.util
import pathlib

import keras
import pytest

from keras_attention import data

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_script(path, name=None):
    """Imports the Python file `path` (relative to the repository root, or
    absolute) as a module named `name` (defaults to its path)."""
    path = ROOT / path
    if name is None:
        name = "_".join(path.relative_to(ROOT).with_suffix("").parts)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def data_available(*names):
    """Whether every data file `names` resolves (staged or downloadable)."""
    try:
        for name in names:
            data.get_file(name)
    except Exception:  # no staged data, and no network to download it
        return False
    return True


SICK_AND_GLOVE = ("sick/SICK_trial.txt", "glove/glove.6B.50d.subset.txt.gz")


def needs_data(*names):
    """A `skipif` mark for tests that need the data files `names`."""
    return pytest.mark.skipif(
        not data_available(*names),
        reason=f"needs the data files {', '.join(names)}",
    )


# An application feature whose code is the application's own Python (flags,
# checkpoints, averaging, resuming), the same on every backend, tested on
# tensorflow and torch; jax spends minutes compiling each application run
# (the jax run is the suite's longest). Each application's plain smoke run
# still runs on jax.
not_on_jax = pytest.mark.skipif(
    keras.backend.backend() == "jax",
    reason="application feature, the same on every backend: tested on "
    "tensorflow and torch; jax runs the plain smoke run",
)


# A second smoke run of an application with other flags of the same
# pipeline (another optimizer split): run once, in the tensorflow run; the
# split itself is tested on every backend in tests/models/resan_test.py.
second_smoke_run = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="a second smoke run of the same pipeline: run once, on tensorflow",
)


SERVING_CLIENT = ROOT / "tests" / "export" / "serving_client.py"


def serve(requests, folder):
    """Answers `{name: request}` with exported SavedModels in a separate
    process that imports only tensorflow and tensorflow_text
    (`tests/export/serving_client.py`, whose docstring gives the request
    format). Returns `({name: outputs}, the client's whole answer)`."""
    import json
    import os
    import subprocess
    import sys

    folder = pathlib.Path(folder)
    with open(folder / "requests.json", "w") as f:
        json.dump(list(requests.values()), f)
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    result = subprocess.run(
        [
            sys.executable,
            str(SERVING_CLIENT),
            str(folder / "requests.json"),
            str(folder / "results.json"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    with open(folder / "results.json") as f:
        answer = json.load(f)
    return dict(zip(requests, answer["results"])), answer


def zero_token_embedding(model, token_id):
    """Zeroes one row of `model`'s (tied) token embedding, so that token's
    logit is 0 at every step, below the best of the random others: a
    random test model then does not end every output at once."""
    import keras
    import numpy as np

    embeddings = model.token_embedding.token_embedding.embeddings
    values = np.array(keras.ops.convert_to_numpy(embeddings))
    values[token_id] = 0.0
    embeddings.assign(values)
