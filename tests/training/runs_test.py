"""The run folder: atomic writes, reads, and loading the run's model."""

import dataclasses
import json
import os

import keras
import numpy as np
import pytest

from keras_attention import models
from keras_attention.training import runs


@dataclasses.dataclass
class Config:
    epochs: int = 3
    output_dir: str = "runs/x"


def test_config_and_metrics_round_trip(tmp_path):
    runs.write_config(tmp_path, Config())
    runs.write_metrics(tmp_path, {"b": 2.5, "a": [1, 2]}, sort_keys=True)
    assert runs.read_config(tmp_path) == {"epochs": 3, "output_dir": "runs/x"}
    assert runs.read_metrics(tmp_path) == {"a": [1, 2], "b": 2.5}
    text = (tmp_path / runs.METRICS_FILE).read_text()
    assert text.index('"a"') < text.index('"b"')


def test_a_missing_file_reads_as_empty(tmp_path):
    assert runs.read_config(tmp_path) == {}
    assert runs.read_json(tmp_path, runs.TRAINING_FILE) == {}


def test_writes_leave_no_temporary_file(tmp_path):
    runs.write_config(tmp_path, {"a": 1})
    runs.write_vocabulary(tmp_path, ["<pad>", "<unk>", "dog"])
    assert sorted(os.listdir(tmp_path)) == [
        runs.CONFIG_FILE,
        runs.VOCABULARY_FILE,
    ]


def test_a_failed_write_keeps_the_previous_file(tmp_path):
    runs.write_metrics(tmp_path, {"a": 1})
    with pytest.raises(TypeError):
        runs.write_metrics(tmp_path, {"a": object()})
    assert runs.read_metrics(tmp_path) == {"a": 1}
    assert os.listdir(tmp_path) == [runs.METRICS_FILE]


def test_vocabulary_round_trip_by_folder_or_path(tmp_path):
    words = ["<pad>", "<unk>", "a", "n't", "é"]
    path = runs.write_vocabulary(tmp_path, words)
    assert path == os.path.join(tmp_path, runs.VOCABULARY_FILE)
    assert runs.read_vocabulary(tmp_path) == words
    assert runs.read_vocabulary(path) == words
    assert (tmp_path / runs.VOCABULARY_FILE).read_text("utf-8").endswith("é\n")


def test_missing_vocabulary_and_model_are_named(tmp_path):
    with pytest.raises(ValueError, match="No vocabulary file"):
        runs.read_vocabulary(tmp_path)
    with pytest.raises(ValueError, match="No model.keras"):
        runs.load_model(tmp_path)


def test_load_model_reads_the_runs_model(tmp_path):
    model = models.bag_of_words_model(vocabulary_size=6, hidden_dim=4)
    model.save(tmp_path / runs.MODEL_FILE)
    loaded = runs.load_model(tmp_path)
    x = {
        "premise": np.array([[2, 3, 0]], "int32"),
        "hypothesis": np.array([[4, 0, 0]], "int32"),
    }
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(loaded(x)),
        keras.ops.convert_to_numpy(model(x)),
        atol=1e-6,
    )


def test_json_is_plain_and_indented(tmp_path):
    runs.write_json(tmp_path, "x.json", {"a": 1})
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": 1}
    assert (tmp_path / "x.json").read_text() == '{\n  "a": 1\n}'


def test_summary_lists_the_figures_the_time_and_the_files_written(tmp_path):
    (tmp_path / "model.keras").write_text("")
    (tmp_path / "metrics.json").write_text("{}")
    text = runs.summary(
        str(tmp_path),
        {"test accuracy": 0.81234, "epochs": 3, "bleu": None},
        seconds=90.0,
        names=("model.keras", "metrics.json", "figure.png"),
    )
    lines = text.splitlines()
    assert lines[0] == (
        "Done: test accuracy 0.8123, epochs 3, bleu n/a; 1.5 min of training."
    )
    # The files that exist, with their paths; the missing figure is left out.
    assert lines[1:] == [
        f"  model.keras:  {tmp_path / 'model.keras'}",
        f"  metrics.json: {tmp_path / 'metrics.json'}",
    ]
    assert runs.summary(str(tmp_path), {"r": 0.5}, None, names=()) == (
        "Done: r 0.5000."
    )


def strict_load(text):
    """`json.loads` that rejects NaN and Infinity, as strict parsers do."""

    def reject(name):
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=reject)


def test_metrics_are_strict_json_with_a_note_per_missing_number(tmp_path):
    runs.write_metrics(
        tmp_path,
        {
            "tokens_per_second": float("nan"),
            "loss": [0.5, float("inf")],
            "nested": {"dev": np.float32("-inf"), "test": np.float64(0.25)},
            "steps": np.int64(7),
        },
    )
    values = strict_load((tmp_path / runs.METRICS_FILE).read_text())
    assert values["tokens_per_second"] is None
    assert values["loss"] == [0.5, None]
    assert values["nested"] == {"dev": None, "test": 0.25}
    assert values["steps"] == 7
    assert set(values["notes"]) == {
        "tokens_per_second",
        "loss[1]",
        "nested.dev",
    }
    assert "nan" in values["notes"]["tokens_per_second"]
    assert "null" in values["notes"]["loss[1]"]


def test_a_producer_s_own_note_wins(tmp_path):
    metrics = {
        "tokens_per_second": float("nan"),
        "notes": {"tokens_per_second": "no training step ran"},
    }
    runs.write_metrics(tmp_path, metrics)
    values = strict_load((tmp_path / runs.METRICS_FILE).read_text())
    assert values["notes"] == {"tokens_per_second": "no training step ran"}
    # The caller's dict is left as it was.
    assert np.isnan(metrics["tokens_per_second"])


def test_finite_metrics_are_written_without_notes(tmp_path):
    runs.write_metrics(tmp_path, {"bleu": 12.5})
    assert strict_load((tmp_path / runs.METRICS_FILE).read_text()) == {
        "bleu": 12.5
    }
