"""Two workers train the translation smoke run with MultiWorkerMirroredStrategy.

Two processes on 127.0.0.1 (free ports, `TF_CONFIG` with two workers, worker
0 is the chief) run `applications/translation/train.py --smoke --strategy
multi_worker` to the end. The chief writes `model.keras` and
`metrics.json` to the output folder; the other worker writes its copies to
a temporary folder that it removes. The chief's model then loads and
predicts. The run is bounded by a timeout and both processes are killed
in any case.
"""

import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

import keras_attention  # noqa: F401  (registers the saved classes)

ROOT = pathlib.Path(__file__).parents[2]
TRAIN = ROOT / "applications" / "translation" / "train.py"
# A guard against a hung collective, not a speed check: the two workers
# share two cores with the suite's other pytest-xdist worker, and the run
# took 300 s on a loaded machine.
TIMEOUT_S = 900


def free_ports(count):
    """Ports that were free a moment ago (the OS picks them)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def start_worker(index, addresses, output_dir, log):
    config = {
        "cluster": {"worker": addresses},
        "task": {"type": "worker", "index": index},
    }
    env = dict(
        os.environ,
        KERAS_BACKEND="tensorflow",
        TF_CONFIG=json.dumps(config),
        TF_CPP_MIN_LOG_LEVEL="2",
        PYTHONPATH=str(ROOT),
    )
    command = [
        sys.executable,
        str(TRAIN),
        "--smoke",
        "--smoke-steps",
        "8",
        "--strategy",
        "multi_worker",
        "--output-dir",
        str(output_dir),
    ]
    return subprocess.Popen(
        command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
    )


def test_two_workers_train_to_the_end_and_the_chief_model_loads(tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("MultiWorkerMirroredStrategy is a tensorflow strategy")
    output_dir = tmp_path / "run"
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    logs = [open(tmp_path / f"worker{i}.log", "w") for i in range(2)]
    workers = []
    try:
        for index in range(2):
            workers.append(
                start_worker(index, addresses, output_dir, logs[index])
            )
        deadline = time.monotonic() + TIMEOUT_S
        codes = [
            worker.wait(timeout=max(1.0, deadline - time.monotonic()))
            for worker in workers
        ]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        for log in logs:
            log.close()
    outputs = [(tmp_path / f"worker{i}.log").read_text() for i in range(2)]
    assert codes == [0, 0], "\n\n".join(o[-3000:] for o in outputs)
    for output in outputs:
        assert "MultiWorkerMirroredStrategy" in output or (
            "CollectiveAllReduceStrategy" in output
        ), output[-2000:]
        assert "2 replicas in sync" in output, output[-2000:]
        assert "Copy task: exact-match" in output, output[-2000:]
    # One checkpoint, from the chief only.
    assert sorted(p.name for p in output_dir.iterdir()) == [
        "metrics.json",
        "model.keras",
    ]
    metrics = json.loads((output_dir / "metrics.json").read_text())
    assert metrics["replicas"] == 2 and metrics["steps"] == 8
    model = keras.saving.load_model(output_dir / "model.keras")
    ids = np.array([[5, 6, 7, 3, 0, 0]], "int32")
    logits = model.predict(
        {"encoder_token_ids": ids, "decoder_token_ids": ids}, verbose=0
    )
    assert logits.shape == (1, 6, 20)
    assert np.all(np.isfinite(logits))
