"""Every tutorial runs top to bottom and writes its figures.

The first tutorial runs on every backend, the others on tensorflow only.
"""

import os
import pathlib
import subprocess
import sys

import keras
import pytest

TUTORIALS = pathlib.Path(__file__).parents[1] / "tutorials"
EVERY_BACKEND = {"attention_and_masks.py"}
FIGURES = {
    "attention_and_masks.py": ["attention_weights.png"],
    "multi_device.py": ["replica_losses.png"],
    "translation.py": ["cross_attention.png"],
    "resan.py": [
        "resan_sentence_1.png",
        "resan_sentence_2.png",
        "resan_keep_probabilities.png",
    ],
    "decomposable_attention.py": ["alignment.png"],
    "export_and_serve.py": ["serving_latency.png"],
    "positional_encoding.py": [
        "sinusoidal_encoding.png",
        "position_similarity.png",
    ],
}


def tutorial_files():
    return sorted(p.name for p in TUTORIALS.glob("*.py"))


def test_every_tutorial_declares_its_figures():
    missing = set(tutorial_files()) - set(FIGURES)
    assert not missing, f"add the figures of {missing} to FIGURES"


@pytest.mark.parametrize("name", tutorial_files())
def test_tutorial_runs_and_writes_figures(name, tmp_path):
    backend = keras.backend.backend()
    if name not in EVERY_BACKEND and backend != "tensorflow":
        pytest.skip("runs on the tensorflow backend only")
    env = dict(os.environ, KERAS_BACKEND=backend, MPLBACKEND="Agg")
    result = subprocess.run(
        [sys.executable, str(TUTORIALS / name), "--output-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    for figure in FIGURES.get(name, []):
        path = tmp_path / figure
        assert path.exists(), f"{name} did not write {figure}"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 1000
