"""`benchmarks/gpu_check.py`'s CPU mode, as it would run on a GPU machine
without TensorFlow: every part shrunk to seconds."""

import json
import subprocess
import sys

import helpers
import keras
import pytest

gpu_check = helpers.load_script("benchmarks/gpu_check.py")


@pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="spawns its own jax processes whatever the suite's backend: "
    "run once, in the suite's shortest backend run (torch)",
)
def test_cpu_check_runs_every_part_without_tensorflow(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(helpers.ROOT / "benchmarks" / "gpu_check.py"),
            "--cpu-check",
            "--backends=jax",
            "--block-tensorflow",
            "--budget-s=1500",
            f"--output-dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=helpers.ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_check_cpu.json").read_text())
    parts = {record["part"]: record for record in report["parts"]}
    assert set(parts) == set(gpu_check.PARTS)
    failed = {p: r for p, r in parts.items() if r["status"] != "ok"}
    assert not failed, json.dumps(failed, indent=1)[-3000:]
    assert parts["environment"]["keras_backend"] == "jax"
    assert parts["environment"]["devices"]
    assert parts["layer_tests"]["counts"].get("passed", 0) > 0
    assert not parts["layer_tests"]["counts"].get("failed")
    training = parts["training"]
    assert training["dtype_policy"] == "mixed_bfloat16"
    assert training["peak_tflops"] > 0
    for run in training["runs"]:
        assert run["tokens_per_second"] > 0
        assert 0 < run["fraction_of_peak"]
    generation = parts["generation"]
    # keras-hub imports without TensorFlow on jax: the comparison ran.
    assert "skipped" not in generation, generation.get("skipped")
    assert generation["identical_tokens"] is True
    markdown = (tmp_path / "gpu_check_cpu.md").read_text()
    assert "| training | jax | ok |" in markdown


def test_bad_flags_name_the_value():
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["--backends", "mxnet"])
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["--steps", "0"])
    args = gpu_check.parse_args(["--cpu-check", "--parts", "training"])
    assert args.parts == ["training"] and args.backends == ["jax", "torch"]
