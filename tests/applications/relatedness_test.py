"""The relatedness application runs end to end in --smoke mode."""

import json
import math
import pathlib

import helpers
import keras
import numpy as np
import pytest

from keras_attention import optimizers

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "applications" / "relatedness" / "train.py"
METRIC_KEYS = (
    "test_pearson",
    "test_spearman",
    "test_mse",
    "train_seconds",
    "parameters",
    "backend",
    "stopped_by_time_limit",
)


def load_script():
    return helpers.load_script(SCRIPT, "relatedness_train")


@helpers.needs_data(*helpers.SICK_AND_GLOVE)
@pytest.mark.parametrize(
    "flags",
    [
        pytest.param([], id="shared"),
        pytest.param(
            # The authors' sampler training: Adadelta, no baseline.
            ["--sampler-optimizer", "adadelta", "--baseline", "none"],
            id="adadelta",
            marks=helpers.second_smoke_run,
        ),
    ],
)
def test_smoke_run_writes_metrics_and_a_loadable_model(tmp_path, flags):
    train = load_script()
    config = train.parse_args(
        [
            *flags,
            "--smoke",
            "--model",
            "resan",
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
    assert written == json.loads(json.dumps(metrics))
    for key in METRIC_KEYS:
        assert key in written, key
    for key in ("test_pearson", "test_spearman", "test_mse"):
        assert math.isfinite(written[key]), (key, written[key])
    assert written["backend"] == keras.backend.backend()
    assert written["sampler_optimizer"] == config.sampler_optimizer
    assert written["baseline"] == config.baseline
    assert written["pairs"] == {"train": 64, "dev": 32, "test": 32}
    model = keras.saving.load_model(tmp_path / "model.keras")
    assert model.count_params() > written["parameters"]
    assert model.baseline == config.baseline
    assert (tmp_path / "last.keras").exists()
    assert 1 <= written["best_epoch"] <= written["epochs"]

    # evaluate.py reads the run folder and reports the same dev figures
    # as training did, with the calibration beside them.
    evaluate = helpers.load_script(
        ROOT / "applications" / "relatedness" / "evaluate.py",
        "relatedness_evaluate",
    )
    out = tmp_path / "dev.json"
    result = evaluate.main(
        ["--run-dir", str(tmp_path), "--split", "dev", "--json-out", str(out)]
    )
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert result["pairs"] == 500  # the whole trial split
    for key in ("pearson", "mse", "slope", "intercept", "selection_rate"):
        assert math.isfinite(result[key]), (key, result[key])
    last = evaluate.main(
        ["--run-dir", str(tmp_path), "--split", "dev"]
        + ["--model-file", "last.keras"]
    )
    assert last["model_file"] == "last.keras"


def test_sampler_optimizer_gives_the_samplers_their_own():
    train = load_script()
    # "shared": an Adam of the same settings for each group, so that each
    # skips the schedule's phases without its loss.
    shared = train.make_optimizer(train.parse_args([]))
    assert isinstance(shared, optimizers.GroupSkippingOptimizer)
    soft, samplers = shared.optimizers
    assert soft is not samplers and isinstance(soft, keras.optimizers.Adam)
    assert soft.get_config() == samplers.get_config() | {"name": soft.name}
    optimizer = train.make_optimizer(
        train.parse_args(["--sampler-optimizer", "adadelta"])
    )
    assert isinstance(optimizer, optimizers.GroupSkippingOptimizer)
    kinds = {type(inner).__name__: inner for inner in optimizer.optimizers}
    assert sorted(kinds) == ["Adadelta", "Adam"]
    adadelta = kinds["Adadelta"]
    assert float(adadelta.learning_rate) == pytest.approx(0.5)
    assert (adadelta.rho, adadelta.epsilon) == (0.95, 1e-8)
    assert float(kinds["Adam"].learning_rate) == pytest.approx(1e-3)
    optimizer = train.make_optimizer(
        train.parse_args(
            ["--sampler-optimizer", "adagrad", "--sampler-learning-rate", "0.2"]
        )
    )
    kinds = {type(inner).__name__: inner for inner in optimizer.optimizers}
    assert float(kinds["Adagrad"].learning_rate) == pytest.approx(0.2)


def test_sampler_learning_rate_needs_a_sampler_optimizer(capsys):
    train = load_script()
    with pytest.raises(SystemExit) as raised:
        train.parse_args(["--sampler-learning-rate", "0.1"])
    assert raised.value.code == 2
    message = capsys.readouterr().err
    assert "--sampler-learning-rate" in message
    assert "--sampler-optimizer shared" in message


def test_unknown_model_is_rejected():
    train = load_script()
    with pytest.raises(SystemExit):
        train.parse_args(["--model", "lstm"])


def test_a_nan_dev_correlation_still_leaves_a_checkpoint(tmp_path, monkeypatch):
    # Constant predictions give a NaN Pearson r: the first epoch is kept
    # anyway (training must end with a model to load), and a later finite
    # r replaces it.
    script = load_script()
    values = iter([math.nan, math.nan, 0.2, math.nan])
    monkeypatch.setattr(
        script, "correlations", lambda *args: {"pearson": next(values)}
    )
    saved = []

    def save(model, path):
        saved.append(path)
        pathlib.Path(path).write_text("weights")

    monkeypatch.setattr(script.files, "atomic_save", save)
    path = str(tmp_path / "checkpoint.keras")
    tracker = script.DevCorrelation(None, None, path)
    tracker.set_model(keras.Sequential())
    for epoch in range(4):
        tracker.on_epoch_end(epoch, {})
    assert saved == [path, path]  # epoch 1 (NaN, the first), epoch 3
    assert tracker.best == 0.2
    assert math.isnan(tracker.history[0]) and len(tracker.history) == 4


def test_schedule_defaults_scale_the_authors_steps():
    # The authors: soft alone to 6,000 of 200 epochs of 4,500 / 128
    # steps, samplers alone to 6,500; here as fractions of epochs * steps
    # per epoch.
    train = load_script()
    config = train.parse_args(["--epochs", "20"])
    authors = 200 * 4500 / 128
    assert train.resan_schedule(config, 180) == (
        round(6000 / authors * 3600),
        round(500 / authors * 3600),
    )
    config = train.parse_args(
        ["--soft-only-steps", "7", "--sampler-only-steps", "0"]
    )
    assert train.resan_schedule(config, 180) == (7, 0)
    assert config.objective == "mse" and config.sparsity_penalty == 0.006
    assert config.weight_decay == 0.0
    assert train.parse_args(["--weight-decay", "1e-4"]).weight_decay == 1e-4


def test_calibration_recovers_a_known_line():
    evaluate = helpers.load_script(
        ROOT / "applications" / "relatedness" / "evaluate.py",
        "relatedness_evaluate",
    )
    gold = np.linspace(1.0, 5.0, 41)
    predicted = (gold - 1.0) / 2.0  # compressed and shifted
    result = evaluate.calibration(predicted, gold)
    assert result["slope"] == pytest.approx(2.0)
    assert result["intercept"] == pytest.approx(1.0)
    assert result["mse_after_linear_fit"] == pytest.approx(0.0, abs=1e-12)
    assert result["pearson"] == pytest.approx(1.0)
    assert result["mse"] == pytest.approx(np.mean((predicted - gold) ** 2))
    assert result["mean_predicted"] == pytest.approx(1.0)
