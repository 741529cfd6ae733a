"""Runs the test suite once per Keras backend, each in its own process.

Usage: python tests/run_backends.py [tensorflow] [jax] [torch] [-- PYTEST_ARGS]

Prints one summary line per backend and a total line; exits non-zero if any
backend's run failed.
"""

import os
import re
import subprocess
import sys
import tempfile
import time

ALL_BACKENDS = ("tensorflow", "jax", "torch")
COUNT_PATTERN = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed)")


def run_backend(backend, pytest_args):
    env = dict(os.environ, KERAS_BACKEND=backend)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    command = [sys.executable, "-m", "pytest", "-q", "-rs", *pytest_args]
    print(f"\n===== KERAS_BACKEND={backend}: {' '.join(command)}", flush=True)
    start = time.monotonic()
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    last_summary = ""
    for line in process.stdout:
        sys.stdout.write(line)
        if COUNT_PATTERN.search(line) and " in " in line:
            last_summary = line
    process.wait()
    counts = {}
    for number, kind in COUNT_PATTERN.findall(last_summary):
        kind = "errors" if kind.startswith("error") else kind
        counts[kind] = counts.get(kind, 0) + int(number)
    return process.returncode, counts, time.monotonic() - start


def main(argv):
    if "--" in argv:
        split = argv.index("--")
        backends, pytest_args = argv[:split], argv[split + 1 :]
    else:
        backends, pytest_args = argv, []
    backends = backends or list(ALL_BACKENDS)
    for backend in backends:
        if backend not in ALL_BACKENDS:
            raise SystemExit(
                f"Unknown backend. Expected one of {ALL_BACKENDS}. "
                f"Received: backend={backend!r}"
            )
    # Shared by the runs, so that models saved on one backend are loaded on
    # the others (tests/cross_backend_test.py).
    with tempfile.TemporaryDirectory() as cross_dir:
        os.environ["KERAS_ATTENTION_CROSS_DIR"] = cross_dir
        results = {b: run_backend(b, pytest_args) for b in backends}
    print("\n===== Summary per backend")
    total = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    worst = 0
    for backend, (code, counts, seconds) in results.items():
        for kind in total:
            total[kind] += counts.get(kind, 0)
        # pytest exits 5 when it collected nothing: that is a failure here.
        worst = max(worst, code)
        parts = ", ".join(f"{counts.get(k, 0)} {k}" for k in total)
        print(f"{backend:>10}: {parts} ({seconds:.0f} s, exit {code})")
    print(
        f"{total['passed']} passed, {total['failed'] + total['errors']} "
        f"failed, {total['skipped']} skipped"
    )
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
