"""The NLI application trains ReSAN end to end in --smoke mode."""

import json
import pathlib

import helpers
import keras
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "applications" / "nli" / "train.py"


def load_script():
    return helpers.load_script(SCRIPT, "nli_train_resan")


@helpers.needs_data(*helpers.SICK_AND_GLOVE)
def test_resan_smoke_run_writes_metrics_and_a_loadable_model(tmp_path):
    train = load_script()
    config = train.parse_args(
        [
            "--smoke",
            "--model",
            "resan",
            "--dataset",
            "sick",
            "--hidden-dim",
            "8",
            "--max-length",
            "12",
            "--output-dir",
            str(tmp_path),
            "--verbose",
            "0",
        ]
    )
    metrics = train.train(config)
    written = json.loads((tmp_path / "metrics.json").read_text())
    assert written["model"] == "resan"
    assert written["backend"] == keras.backend.backend()
    assert 0.0 <= written["dev_accuracy"] <= 1.0
    assert 0.0 <= written["test_accuracy"] <= 1.0
    assert written["test_accuracy"] == pytest.approx(metrics["test_accuracy"])
    model = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    assert isinstance(model, train.MODEL_BUILDERS["resan"])
    assert tuple(model.output["probabilities"].shape) == (None, 3)
    assert tuple(model.output["selection_percentage"].shape) == (None, 2)
    for split in ("dev", "test"):
        assert 0.0 <= written[f"{split}_selection_percentage"] <= 1.0
    # evaluate.py reads a ReSAN run (its outputs are a dict) and reports
    # the accuracy and the samplers' selection percentage.
    evaluate = helpers.load_script(
        ROOT / "applications" / "nli" / "evaluate.py", "nli_evaluate_resan"
    )
    result = evaluate.main(["--run-dir", str(tmp_path), "--split", "dev"])
    assert 0.0 <= result["accuracy"] <= 1.0
    assert 0.0 <= result["selection_percentage"] <= 1.0


def test_resan_schedule_defaults():
    # Samplers alone for the authors' 5,000 SNLI steps of 128 pairs
    # (1.16 epochs), after a soft phase of half the run, or none when a
    # trained model is loaded.
    train = load_script()
    config = train.parse_args(["--model", "resan", "--epochs", "10"])
    epochs = 5000 / (550152 / 128)
    assert train.resan_schedule(config, 300) == (1500, round(epochs * 300))
    config = train.parse_args(
        ["--model", "resan", "--initial-weights", "w.weights.h5"]
    )
    assert train.resan_schedule(config, 300)[0] == 0
    assert config.sparsity_penalty == 0.02
