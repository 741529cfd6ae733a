import json
import statistics

import helpers
import pytest

seeds = helpers.load_script("benchmarks/seeds.py")


def test_summarize_gives_mean_sample_spread_and_range():
    summary = seeds.summarize([0.84, 0.86, 0.85])
    assert summary["mean"] == pytest.approx(0.85)
    assert summary["std"] == pytest.approx(statistics.stdev([0.84, 0.86, 0.85]))
    assert (summary["min"], summary["max"], summary["runs"]) == (0.84, 0.86, 3)
    assert seeds.summarize([0.5])["std"] == 0.0


def test_finished_runs_are_read_not_trained_again(tmp_path, monkeypatch):
    # Both seeds already have their metrics: nothing is trained, the
    # summary is computed from the files and written to the results folder.
    for seed, r in ((1, 0.80), (2, 0.90)):
        folder = tmp_path / "runs" / f"seed_{seed}"
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(
            json.dumps({"test_pearson": r, "epochs": 3})
        )
    monkeypatch.setattr(seeds.common, "RESULTS_DIR", str(tmp_path / "out"))
    monkeypatch.setattr(
        seeds.subprocess,
        "run",
        lambda *a, **k: pytest.fail("a finished seed was trained again"),
    )
    result = seeds.main(
        [
            "--application=relatedness",
            "--seeds=1,2",
            f"--output-dir={tmp_path / 'runs'}",
            "--metrics=test_pearson",
            "--name=sweep",
            "--",
            "--model",
            "resan",
        ]
    )
    assert result["summary"]["test_pearson"]["mean"] == pytest.approx(0.85)
    assert result["train_args"] == ["--model", "resan"]
    written = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert written["runs"]["2"] == {"test_pearson": 0.9, "epochs": 3}
    assert "0.8500 ± 0.0707" in (tmp_path / "out" / "sweep.md").read_text()


def test_a_missing_metric_names_the_file_and_its_keys(tmp_path, monkeypatch):
    folder = tmp_path / "seed_1"
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({"test_mse": 0.3}))
    monkeypatch.setattr(seeds.common, "RESULTS_DIR", str(tmp_path / "out"))
    with pytest.raises(SystemExit, match="has no \\['test_pearson'\\]"):
        seeds.main(
            [
                "--application=relatedness",
                "--seeds=1",
                f"--output-dir={tmp_path}",
                "--metrics=test_pearson",
                "--name=sweep",
            ]
        )
