"""Helpers shared by the benchmark scripts.

Nothing here imports keras: a benchmark picks its backend by setting
`KERAS_BACKEND` before its first keras import, which these helpers must not
pre-empt.
"""

import json
import os
import platform
import statistics
import subprocess
import sys
import time

BACKENDS = ("tensorflow", "jax", "torch")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO_ROOT, "benchmarks", "results")


def set_backend(backend):
    """Selects the keras backend; call before the first keras import."""
    if "keras" in sys.modules:
        raise RuntimeError("keras was imported before the backend was set.")
    os.environ["KERAS_BACKEND"] = backend
    if REPO_ROOT not in sys.path:
        sys.path.insert(0, REPO_ROOT)


def parse_ints(text):
    """`"64,256,1024"` -> `[64, 256, 1024]`."""
    return [int(part) for part in text.split(",") if part.strip()]


def median_ms(seconds):
    return 1000.0 * statistics.median(seconds)


def time_interleaved(steps, repeats, first_round=0):
    """Times each of `steps` `repeats` times, round-robin.

    Round `r` starts with step `r % len(steps)` (A, B; B, A; ...), so no step
    always runs first or right after the same neighbour; `first_round`
    numbers the first round, so a call that continues an earlier one goes
    on with its rotation instead of starting it again. Each step must
    block until its result is ready. Returns one list of durations in
    seconds per step; entry `r` of every list comes from round `r`, so
    ratios can be paired round by round (`paired_ratios`).
    """
    times = [[] for _ in steps]
    for r in range(first_round, first_round + repeats):
        for k in range(len(steps)):
            i = (r + k) % len(steps)
            start = time.perf_counter()
            steps[i]()
            times[i].append(time.perf_counter() - start)
    return times


def paired_ratios(numerator, denominator):
    """Median, minimum and maximum of `numerator[r] / denominator[r]`.

    For two lists of durations from `time_interleaved`: the ratio of each
    round's two timings, which share that round's machine load. The spread
    says how far one round's ratio can be from the median.
    """
    ratios = [a / b for a, b in zip(numerator, denominator)]
    return {
        "median": round(statistics.median(ratios), 3),
        "min": round(min(ratios), 3),
        "max": round(max(ratios), 3),
        "rounds": len(ratios),
    }


def environment(backend):
    """Versions and machine facts for the results file."""
    import keras
    import numpy

    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        # Other processes on the machine inflate and spread the timings.
        "load_average_1_5_15min": [round(x, 2) for x in os.getloadavg()],
        "cpu_model": _cpu_model(),
        "keras": keras.__version__,
        "numpy": numpy.__version__,
    }
    if backend == "tensorflow":
        import tensorflow as tf

        info["tensorflow"] = tf.__version__
    elif backend == "jax":
        import jax
        import jaxlib

        info["jax"] = jax.__version__
        info["jaxlib"] = jaxlib.__version__
        info["jax_devices"] = [str(d) for d in jax.devices()]
    elif backend == "torch":
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def run_backend_subprocess(script, backend, args, json_path):
    """Runs `script --backend backend args... --json-out json_path`.

    The child gets `KERAS_BACKEND` in its environment so keras starts on the
    right backend. Returns the child's JSON result and its wall time.
    """
    env = dict(os.environ, KERAS_BACKEND=backend)
    command = [sys.executable, script, "--backend", backend]
    command += list(args) + ["--json-out", json_path]
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True)
    wall = time.perf_counter() - start
    with open(json_path) as f:
        return json.load(f), wall


def write_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")


def write_report(stem, report, markdown, json_out=None):
    """Writes `report` to `json_out`, or to `RESULTS_DIR/<stem>.json` with
    `markdown` beside it as `<stem>.md`, and prints `markdown`."""
    if json_out:
        write_json(json_out, report)
    else:
        write_json(os.path.join(RESULTS_DIR, stem + ".json"), report)
        with open(os.path.join(RESULTS_DIR, stem + ".md"), "w") as f:
            f.write(markdown)
    print(markdown)


def markdown_table(headers, rows):
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return "\n".join(lines) + "\n"
