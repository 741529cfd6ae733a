"""Runs the test suite once per Keras backend, each in its own process.

Usage: python tests/run_backends.py [--jobs N] [tensorflow] [jax] [torch]
       [-- PYTEST_ARGS]

`--jobs N` runs up to N backends at the same time (default: one per usable
CPU, at most one per backend). When N is no more than the CPUs this process
may use, each running backend is pinned to a CPU of its own, so that two
backends' thread pools do not fight over the same cores; a backend's output
is printed whole when it ends. `--jobs 1` runs the backends one after the
other and streams their output.

When the runs saved models for `tests/cross_backend_test.py` on two or more
backends, that module runs once more on each backend, so that every backend
loads the files all the others saved.

Prints one summary line per run and a total line; exits non-zero if any run
failed.
"""

import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ALL_BACKENDS = ("tensorflow", "jax", "torch")
# Start order when backends run side by side: the longest first, so that the
# short torch run fills the CPU the first one to end leaves. One pytest
# process per backend, each on one CPU of the 2-core machine: about 1,400 s
# for jax, 1,100 s for tensorflow and 170 s for torch (CONTRIBUTING.md).
LONGEST_FIRST = ("jax", "tensorflow", "torch")
COUNT_PATTERN = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed)")
CROSS_TEST = pathlib.Path(__file__).with_name("cross_backend_test.py")
TEST_XLA_FLAGS = " ".join(
    [
        "--xla_backend_optimization_level=0",
        "--xla_llvm_disable_expensive_passes=true",
    ]
)


def usable_cpus():
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def summary_counts(output):
    last_summary = ""
    for line in output.splitlines():
        if COUNT_PATTERN.search(line) and " in " in line:
            last_summary = line
    counts = {}
    for number, kind in COUNT_PATTERN.findall(last_summary):
        kind = "errors" if kind.startswith("error") else kind
        counts[kind] = counts.get(kind, 0) + int(number)
    return counts


class Run:
    """One pytest process for one backend, streamed or written to a log."""

    def __init__(self, label, backend, pytest_args):
        self.label = label
        self.backend = backend
        self.command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            *pytest_args,
        ]
        self.cpu = None
        self.output = ""

    def header(self):
        pinned = "" if self.cpu is None else f" (pinned to CPU {self.cpu})"
        return (
            f"{self.label}: KERAS_BACKEND={self.backend}{pinned}: "
            f"{' '.join(self.command)}"
        )

    def start(self, stream, cpu=None):
        self.cpu = cpu
        env = dict(os.environ, KERAS_BACKEND=self.backend)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        # Most of the suite's time on jax is XLA compiling many small
        # programs once each: compiled with less optimization they compile
        # faster and run the same tests (CONTRIBUTING.md has the timings).
        # XLA_FLAGS set by the caller win.
        env.setdefault("XLA_FLAGS", TEST_XLA_FLAGS)
        pin = None
        if cpu is not None:

            def pin():
                os.sched_setaffinity(0, {cpu})

        self.stream = stream
        if stream:
            print(f"\n===== {self.header()}", flush=True)
            self.log = None
        else:
            print(f"===== started {self.header()}", flush=True)
            self.log = tempfile.TemporaryFile("w+")
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            self.command,
            env=env,
            stdout=subprocess.PIPE if stream else self.log,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=pin,
        )

    def finish(self):
        """Waits for the process; returns (exit code, counts, seconds)."""
        if self.stream:
            lines = []
            for line in self.process.stdout:
                sys.stdout.write(line)
                lines.append(line)
            self.process.wait()
            self.output = "".join(lines)
        else:
            self.process.wait()
            self.log.seek(0)
            self.output = self.log.read()
            self.log.close()
        self.seconds = time.monotonic() - self.started
        if not self.stream:
            print(f"\n===== ended after {self.seconds:.0f} s: {self.header()}")
            sys.stdout.write(self.output)
            sys.stdout.flush()
        return (
            self.process.returncode,
            summary_counts(self.output),
            self.seconds,
        )


def run_all(runs, jobs):
    """Runs `runs` with at most `jobs` at once; returns {label: result}."""
    if jobs <= 1:
        results = {}
        for run in runs:
            run.start(stream=True)
            results[run.label] = run.finish()
        return results
    cpus = usable_cpus()
    # Pinning needs `os.sched_setaffinity` (Linux); elsewhere runs share CPUs.
    can_pin = hasattr(os, "sched_setaffinity") and jobs <= len(cpus)
    free_cpus = list(cpus) if can_pin else None
    waiting, running, results = list(runs), [], {}
    while waiting or running:
        while waiting and len(running) < jobs:
            run = waiting.pop(0)
            run.start(stream=False, cpu=free_cpus.pop(0) if free_cpus else None)
            running.append(run)
        time.sleep(1)
        for run in [r for r in running if r.process.poll() is not None]:
            results[run.label] = run.finish()
            running.remove(run)
            if free_cpus is not None:
                free_cpus.append(run.cpu)
    return {run.label: results[run.label] for run in runs}


def parse_jobs(argv, default):
    if "--jobs" not in argv:
        return argv, default
    index = argv.index("--jobs")
    value = argv[index + 1] if index + 1 < len(argv) else None
    if value is None or not value.isdigit() or int(value) < 1:
        raise SystemExit(
            f"--jobs takes a positive whole number. Received: --jobs={value!r}"
        )
    return argv[:index] + argv[index + 2 :], int(value)


def main(argv):
    if "--" in argv:
        split = argv.index("--")
        backends, pytest_args = argv[:split], argv[split + 1 :]
    else:
        backends, pytest_args = argv, []
    backends, jobs = parse_jobs(backends, default=None)
    backends = backends or list(ALL_BACKENDS)
    for backend in backends:
        if backend not in ALL_BACKENDS:
            raise SystemExit(
                f"Unknown backend. Expected one of {ALL_BACKENDS}. "
                f"Received: backend={backend!r}"
            )
    if jobs is None:
        jobs = min(len(backends), len(usable_cpus()))
    if jobs > 1:
        backends = sorted(backends, key=LONGEST_FIRST.index)
    # Shared by the runs, so that models saved on one backend are loaded on
    # the others (tests/cross_backend_test.py).
    with tempfile.TemporaryDirectory() as cross_dir:
        os.environ["KERAS_ATTENTION_CROSS_DIR"] = cross_dir
        results = run_all([Run(b, b, pytest_args) for b in backends], jobs)
        saved_by = [p for p in pathlib.Path(cross_dir).iterdir() if p.is_dir()]
        if len(saved_by) > 1:
            # Every file is on disk now: each backend loads all the others.
            cross_args = ["-p", "no:cacheprovider", str(CROSS_TEST)]
            cross = [
                Run(f"{b} (cross-backend)", b, cross_args) for b in backends
            ]
            results.update(run_all(cross, jobs))
    print("\n===== Summary per run")
    total = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    worst = 0
    for label, (code, counts, seconds) in results.items():
        for kind in total:
            total[kind] += counts.get(kind, 0)
        # pytest exits 5 when it collected nothing: that is a failure here.
        worst = max(worst, code)
        parts = ", ".join(f"{counts.get(k, 0)} {k}" for k in total)
        print(f"{label:>26}: {parts} ({seconds:.0f} s, exit {code})")
    print(
        f"{total['passed']} passed, {total['failed'] + total['errors']} "
        f"failed, {total['skipped']} skipped"
    )
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
