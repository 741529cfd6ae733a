"""One command for a GPU machine: device, layer tests, training speed and
generation against keras-hub, on jax and torch, within a time budget.

Usage (on the GPU machine, from the repository root; CONTRIBUTING.md says
how to bring Keras and keras-hub there as wheels):

    python benchmarks/gpu_check.py                  # at most about 8 minutes
    python benchmarks/gpu_check.py --cpu-check      # every part in seconds

The parts, each with a time limit (a part that fails or runs out of time
is recorded and the next one runs); child processes run them in the order
of `schedule`: each backend's environment (with the training on jax),
the layer tests, then generation, within `--budget-s` (470 s) in all:

1. `environment`, per backend: Python, Keras, jax / torch versions, the
   devices they see and `nvidia-smi`'s name, memory and driver.
2. `layer_tests`, per backend: `pytest tests/layers -m "not slow"` (the
   layer tests of `make test-fast`) with the backend on the GPU; passed,
   failed and skipped counts.
3. `training`, jax: the `--recipe tiny-4x128` model (4+4 layers of width
   128, feed-forward 256, 4 heads, dropout 0.3, 8,000 subwords) trained
   for `--steps` steps on synthetic token batches of Multi30k's shape in
   `mixed_bfloat16` with XLA (`jit_compile=True`), the translation
   application's optimizer and loss. Reports real target tokens per
   second, and the achieved matrix-product rate (the model's products
   counted from its sizes, `benchmarks/transformer_training.py`) as a
   fraction of the GPU's bf16 matrix-product rate measured in the same
   process (a compiled square product of `--peak-size`). Two batch sizes:
   the recipe's 4,096 target tokens and 8 times that.
4. `generation`, per backend: greedy generation of ours against keras-hub's
   `CausalLM.generate` on the same weights (`benchmarks/
   keras_hub_generate.py`); skipped, with the reason printed, when
   keras-hub does not import.

Writes `gpu_check.json` and `gpu_check.md` (`gpu_check_cpu.*` with
`--cpu-check`) to `--output-dir` (default `benchmarks/results`).
`--block-tensorflow` makes `tensorflow` and `tensorflow_text` unimportable
in every part, as on a GPU machine without them; `--cpu-check` also hides
the GPUs from jax and torch.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SCRIPT = os.path.abspath(__file__)
PARTS = ("environment", "layer_tests", "training", "generation")
BLOCKED = ("tensorflow", "tensorflow_text", "tf_keras")

# Sizes of each part: on a GPU, and shrunk to seconds for `--cpu-check`.
# Seconds each part may take (a worker's limit is the sum of its parts').
FULL = dict(
    preset="tiny_4x128",
    vocabulary=8000,
    batch=128,  # 128 pairs of 32 target tokens: the recipe's 4,096 tokens
    length=32,
    batch_factors=(1, 8),
    steps=200,
    peak_size=8192,
    peak_repeats=20,
    generate=dict(preset="tiny", batch=8, prompt=32, new=128, repeats=5),
    layer_tests=["tests/layers"],
    limits=dict(environment=45, layer_tests=100, training=120, generation=75),
)
CPU_CHECK = dict(
    preset="tiny",
    overrides=dict(num_layers=1),
    vocabulary=500,
    batch=4,
    length=8,
    batch_factors=(1,),
    steps=3,
    peak_size=128,
    peak_repeats=3,
    generate=dict(preset="tiny", batch=1, prompt=2, new=2, repeats=1),
    layer_tests=["tests/layers/fusion_gate_test.py"],
    # Seconds on an idle CPU; the limits leave room for a busy machine.
    limits=dict(environment=300, layer_tests=300, training=300, generation=300),
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--cpu-check",
        action="store_true",
        help="Every part shrunk to seconds, on the CPU (the suite runs it).",
    )
    parser.add_argument("--backends", default="jax,torch")
    parser.add_argument(
        "--training-backend",
        default="jax",
        help="Backend of the training part (bfloat16 with XLA).",
    )
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--budget-s", type=float, default=470.0)
    parser.add_argument("--output-dir", default=common.RESULTS_DIR)
    parser.add_argument(
        "--block-tensorflow",
        action="store_true",
        help="Make tensorflow and tensorflow_text unimportable in every "
        "part, as on a GPU machine without them.",
    )
    # One part in this process (what the orchestrator runs).
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--json-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("backends", "parts"):
        values = [v.strip() for v in getattr(args, name).split(",") if v]
        allowed = (
            ("jax", "torch", "tensorflow") if name == "backends" else PARTS
        )
        for value in values:
            if value not in allowed:
                parser.error(
                    f"--{name} takes {', '.join(allowed)}. Received: "
                    f"{name}={getattr(args, name)!r}"
                )
        setattr(args, name, values)
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be >= 1. Received: steps={args.steps}")
    return args


# --- Orchestrator ---------------------------------------------------------


def child_environment(args, backend):
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONUNBUFFERED="1")
    # Several processes may share the GPU: jax takes memory as it goes
    # instead of 75% of the device at start.
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    root = common.REPO_ROOT
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (root, env.get("PYTHONPATH")) if p
    )
    if args.cpu_check:
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["JAX_PLATFORMS"] = "cpu"
    if args.block_tensorflow:
        env["GPU_CHECK_BLOCK_TENSORFLOW"] = "1"
    return env


def run_worker(args, parts, backend, sizes, deadline, folder):
    """Runs `parts` for `backend` in one child process (Keras imported
    once); returns one record per part. A part that raises is recorded
    as failed and the next one runs; parts the time limit cut are
    recorded as timed out."""
    limit = min(
        sum(sizes["limits"][part] for part in parts),
        deadline - time.monotonic(),
    )
    if limit < 5:
        return [
            {
                "part": part,
                "backend": backend,
                "status": "not run",
                "reason": "the time budget is spent",
            }
            for part in parts
        ]
    json_out = os.path.join(folder, f"{'_'.join(parts)}_{backend}.json")
    if os.path.exists(json_out):
        os.remove(json_out)
    command = [sys.executable, SCRIPT, "--worker", ",".join(parts)]
    command += ["--backend", backend, "--json-out", json_out]
    if args.cpu_check:
        command.append("--cpu-check")
    if args.steps:
        command += ["--steps", str(args.steps)]
    print(f"== {', '.join(parts)} ({backend}), at most {limit:.0f} s")
    sys.stdout.flush()
    start = time.monotonic()
    tail = ""
    try:
        done = subprocess.run(
            command,
            env=child_environment(args, backend),
            cwd=common.REPO_ROOT,
            timeout=limit,
            capture_output=True,
            text=True,
        )
        sys.stdout.write(_tail(done.stdout, 4000))
        tail = _tail(done.stdout) + _tail(done.stderr)
        ended = "failed" if done.returncode else None
    except subprocess.TimeoutExpired as error:
        tail = _tail(error.stdout) + _tail(error.stderr)
        ended = "timed out"
    seconds = round(time.monotonic() - start, 1)
    finished = {}
    if os.path.isfile(json_out):
        with open(json_out) as f:
            finished = json.load(f)
    records = []
    for part in parts:
        record = {"part": part, "backend": backend}
        if part in finished:
            record.update(finished[part])
        else:
            record.update(
                status=ended or "failed",
                reason=f"{ended or 'ended'} after {seconds} s",
                output_tail=tail,
            )
        records.append(record)
        print(f"   {part} ({backend}): {record['status']}")
    return records


def _tail(text, size=2000):
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text[-size:]


def schedule(args):
    """`[(parts, backend), ...]`, one child process each, in the order
    that puts the cheap and the most wanted figures first: each backend's
    environment (with the training on its backend), then the layer tests,
    then generation."""
    wanted = [p for p in PARTS if p in args.parts]
    order = []
    for backend in args.backends:
        parts = [p for p in ("environment",) if p in wanted]
        if "training" in wanted and backend == args.training_backend:
            parts.append("training")
        if parts:
            order.append((parts, backend))
    if "training" in wanted and args.training_backend not in args.backends:
        order.append((["training"], args.training_backend))
    for part in ("layer_tests", "generation"):
        if part in wanted:
            order += [([part], backend) for backend in args.backends]
    return order


def orchestrate(args):
    sizes = CPU_CHECK if args.cpu_check else FULL
    start = time.monotonic()
    deadline = start + args.budget_s
    folder = os.path.join(args.output_dir, "gpu_check_parts")
    os.makedirs(folder, exist_ok=True)
    records = []
    for parts, backend in schedule(args):
        records += run_worker(args, parts, backend, sizes, deadline, folder)
    report = {
        "mode": "cpu-check" if args.cpu_check else "gpu",
        "command": "python benchmarks/gpu_check.py " + " ".join(sys.argv[1:]),
        "wall_seconds": round(time.monotonic() - start, 1),
        "budget_seconds": args.budget_s,
        "host": platform.node(),
        "parts": records,
    }
    stem = "gpu_check_cpu" if args.cpu_check else "gpu_check"
    common.write_json(os.path.join(args.output_dir, stem + ".json"), report)
    with open(os.path.join(args.output_dir, stem + ".md"), "w") as f:
        f.write(markdown(report))
    print(markdown(report))
    print(f"Wrote {os.path.join(args.output_dir, stem)}.{{json,md}}")
    return report


def markdown(report):
    lines = [
        f"# GPU check ({report['mode']})",
        "",
        f"Command: `{report['command']}`; {report['wall_seconds']:.0f} s "
        f"of a {report['budget_seconds']:.0f} s budget.",
        "",
    ]
    rows = []
    for r in report["parts"]:
        rows.append(
            [
                r["part"],
                r["backend"],
                r["status"],
                _summary(r),
                r.get("seconds"),
            ]
        )
    lines.append(
        common.markdown_table(
            ["part", "backend", "status", "result", "seconds"], rows
        )
    )
    for r in report["parts"]:
        if r["part"] == "training" and r.get("runs"):
            lines += [
                "",
                f"Training, {r['backend']}, `{r['preset']}`, "
                f"{r['dtype_policy']}, jit_compile=True, {r['steps']} steps "
                f"after a compiling warm-up; bf16 matrix-product peak "
                f"measured in the same process: "
                f"{r['peak_tflops']:.1f} TFLOP/s "
                f"({r['peak_size']}x{r['peak_size']}).",
                "",
                common.markdown_table(
                    [
                        "target tokens / batch",
                        "tokens/s (real)",
                        "TFLOP/s (products)",
                        "of peak",
                        "ms / step",
                    ],
                    [
                        [
                            run["padded_target_tokens"],
                            f"{run['tokens_per_second']:,.0f}",
                            f"{run['tflops']:.2f}",
                            f"{run['fraction_of_peak']:.1%}",
                            f"{run['ms_per_step']:.1f}",
                        ]
                        for run in r["runs"]
                    ],
                ),
            ]
    return "\n".join(lines) + "\n"


def _summary(r):
    if r["status"] != "ok":
        return r.get("reason") or (r.get("output_tail") or "")[-160:].replace(
            "\n", " "
        ).replace("|", "/")
    part = r["part"]
    if part == "environment":
        devices = ", ".join(r.get("devices", [])) or "none"
        return f"{r.get('backend_version')}; devices: {devices}"[:200]
    if part == "layer_tests":
        return r.get("summary", "")
    if part == "training":
        best = r["runs"][0]
        return (
            f"{best['tokens_per_second']:,.0f} tokens/s, "
            f"{best['fraction_of_peak']:.1%} of the measured bf16 peak"
        )
    if part == "generation":
        if r.get("skipped"):
            return "skipped: " + r["skipped"]
        return (
            f"ours {r['ours_greedy_ms']:.0f} ms, keras-hub "
            f"{r['keras_hub_greedy_ms']:.0f} ms, identical tokens: "
            f"{r['identical_tokens']}"
        )
    return ""


# --- Workers (each in its own process) -------------------------------------


def block_tensorflow():
    """Makes tensorflow and tensorflow_text unimportable in this process, as
    if not installed (`import` raises `ModuleNotFoundError`, `find_spec`
    gives `None`)."""
    for name in BLOCKED:
        sys.modules[name] = None


def work_environment(args, sizes):
    import keras
    import numpy as np

    result = {
        "python": platform.python_version(),
        "keras": keras.__version__,
        "numpy": np.__version__,
        "keras_backend": keras.backend.backend(),
    }
    if args.backend == "jax":
        import jax

        result["backend_version"] = f"jax {jax.__version__}"
        result["devices"] = [str(d) for d in jax.devices()]
        result["default_backend"] = jax.default_backend()
    elif args.backend == "torch":
        import torch

        result["backend_version"] = f"torch {torch.__version__}"
        result["cuda"] = torch.version.cuda
        result["devices"] = [
            torch.cuda.get_device_name(i)
            for i in range(torch.cuda.device_count())
        ] or ["cpu"]
    else:
        import tensorflow as tf

        result["backend_version"] = f"tensorflow {tf.__version__}"
        result["devices"] = [d.name for d in tf.config.list_logical_devices()]
    try:
        smi = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,memory.total,driver_version",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
        result["nvidia_smi"] = smi.stdout.strip() or smi.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        result["nvidia_smi"] = f"not available ({error.__class__.__name__})"
    try:
        import keras_hub

        result["keras_hub"] = keras_hub.__version__
    except ImportError as error:
        result["keras_hub"] = f"not importable: {error}"
    print(json.dumps(result, indent=1))
    return result


def work_layer_tests(args, sizes):
    command = [sys.executable, "-m", "pytest", *sizes["layer_tests"]]
    command += ["-m", "not slow", "-q", "-p", "no:cacheprovider"]
    if not args.cpu_check:
        # The GPU machine has 16 cores and pytest-xdist.
        command += ["-n", "4"]
    if os.environ.get("GPU_CHECK_BLOCK_TENSORFLOW"):
        # pytest in a process that blocks TensorFlow first.
        command = [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, sys.argv.pop(1)); "
            "import gpu_check; gpu_check.block_tensorflow(); "
            "import pytest; sys.exit(pytest.main(sys.argv[1:]))",
            os.path.dirname(SCRIPT),
            *command[3:],
        ]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    output = done.stdout + done.stderr
    print(output[-3000:])
    counts = {
        word: int(number)
        for number, word in re.findall(
            r"(\d+) (passed|failed|skipped|errors?|xfailed|deselected)",
            output.splitlines()[-1] if output.strip() else "",
        )
    }
    result = {
        "files": sizes["layer_tests"],
        "returncode": done.returncode,
        "counts": counts,
        "summary": (output.strip().splitlines() or [""])[-1].strip("= "),
        "pytest_seconds": round(time.monotonic() - start, 1),
    }
    return result


def work_training(args, sizes):
    import keras
    import numpy as np
    import transformer_training

    from keras_attention import losses
    from keras_attention import schedules
    from keras_attention.models import Transformer
    from keras_attention.models.transformer_base import PRESETS

    keras.config.set_dtype_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    steps = args.steps or sizes["steps"]
    model = Transformer.from_preset(
        sizes["preset"],
        sizes["vocabulary"],
        max_sequence_length=256,
        seed=0,
        **sizes.get("overrides", {}),
    )
    model.compile(
        optimizer=keras.optimizers.Adam(
            schedules.NoamSchedule(model.hidden_dim, warmup_steps=1000),
            beta_1=0.9,
            beta_2=0.98,
            epsilon=1e-9,
        ),
        loss=losses.LabelSmoothedSparseCategoricalCrossentropy(0.1),
        jit_compile=True,
    )
    peak = transformer_training.measure_peak(
        args.backend, sizes["peak_size"], "bfloat16", sizes["peak_repeats"]
    )
    runs = []
    for factor in sizes["batch_factors"]:
        shape = argparse.Namespace(
            batches=4,
            batch=sizes["batch"] * factor,
            source_length=sizes["length"],
            target_length=sizes["length"],
            vocabulary=sizes["vocabulary"],
        )
        batches = transformer_training.make_batches(
            shape, np.random.default_rng(factor)
        )
        model.train_on_batch(*batches[0])  # compiles this shape
        real = [int(np.count_nonzero(y)) for _, y in batches]
        start = time.perf_counter()
        # `train_on_batch` returns the loss to the host: each step is done.
        for step in range(steps):
            loss = model.train_on_batch(*batches[step % len(batches)])
        seconds = time.perf_counter() - start
        flops = transformer_training.matmul_flops(
            dict(PRESETS[sizes["preset"]], **sizes.get("overrides", {})),
            sizes["vocabulary"],
            shape.batch,
            shape.source_length,
            shape.target_length,
        )
        tflops = flops * steps / seconds / 1e12
        tokens = sum(real[s % len(real)] for s in range(steps))
        runs.append(
            {
                "padded_target_tokens": shape.batch * shape.target_length,
                "tokens_per_second": tokens / seconds,
                "ms_per_step": 1000 * seconds / steps,
                "tflops": tflops,
                "fraction_of_peak": tflops * 1000 / peak,
                "final_loss": float(loss),
            }
        )
        print(json.dumps(runs[-1]))
        if not np.isfinite(float(loss)):
            raise RuntimeError(f"The training loss is not finite: {loss}")
    return {
        "preset": sizes["preset"],
        "vocabulary_size": sizes["vocabulary"],
        "dtype_policy": keras.config.dtype_policy().name,
        "jit_compile": True,
        "steps": steps,
        "peak_size": sizes["peak_size"],
        "peak_tflops": peak / 1000,
        "parameter_count": int(model.count_params()),
        "runs": runs,
    }


def work_generation(args, sizes):
    import keras_hub_generate

    if "keras" in sys.modules:
        # An earlier part of this process imported Keras with this
        # backend (`KERAS_BACKEND`); `measure` would refuse to set it.
        keras_hub_generate.common = argparse.Namespace(
            **{k: getattr(common, k) for k in dir(common) if k[0] != "_"}
        )
        keras_hub_generate.common.set_backend = lambda backend: None
    settings = argparse.Namespace(backend=args.backend, **sizes["generate"])
    try:
        result = keras_hub_generate.measure(settings)
    except ImportError as error:
        reason = f"keras-hub does not import on {args.backend}: {error}"
        print(f"Generation skipped: {reason}")
        return {"skipped": reason}
    result.pop("environment", None)
    result["settings"] = vars(settings)
    print(json.dumps({k: v for k, v in result.items() if k != "seconds"}))
    return result


WORKERS = {
    "environment": work_environment,
    "layer_tests": work_layer_tests,
    "training": work_training,
    "generation": work_generation,
}


def work(args):
    """Runs the comma-separated parts of `--worker`, writing every part's
    record to `--json-out` as soon as it ends."""
    if os.environ.get("GPU_CHECK_BLOCK_TENSORFLOW"):
        block_tensorflow()
    sizes = CPU_CHECK if args.cpu_check else FULL
    records, failed = {}, False
    for part in args.worker.split(","):
        start = time.monotonic()
        try:
            result = WORKERS[part](args, sizes)
            status = "failed" if result.get("returncode") else "ok"
        except Exception as error:  # recorded; the next part runs
            traceback.print_exc()
            result = {"reason": f"{error.__class__.__name__}: {error}"[:500]}
            status = "failed"
        failed = failed or status == "failed"
        records[part] = dict(
            result, status=status, seconds=round(time.monotonic() - start, 1)
        )
        common.write_json(args.json_out, records)
    if failed:
        sys.exit(1)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return work(args)
    return orchestrate(args)


if __name__ == "__main__":
    main()
