"""Trains an application once per seed and reports the mean and spread.

Headline quality figures are means over several seeds. This script runs
an application's `train.py` one seed after another (each run has the
machine to itself), reads each run's `metrics.json`, and writes the mean,
sample standard deviation, minimum and maximum of the chosen metrics to
`benchmarks/results/<name>.json` and `.md`, with every run's values.

Usage (the arguments after `--` go to `train.py` unchanged):

    KERAS_BACKEND=jax python benchmarks/seeds.py --application relatedness \\
        --seeds 1,2,3 --output-dir runs/sick_seeds --name relatedness_seeds \\
        --metrics test_pearson,test_spearman,test_mse -- --model resan

A run whose folder already has a `metrics.json` is not trained again, so
an interrupted sweep continues where it stopped (a run cut off in the
middle resumes from its own backup, as `train.py` does).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

APPLICATIONS = ("nli", "relatedness", "translation")


def summarize(values):
    """Mean, sample standard deviation (0 for one value), min and max."""
    values = [float(v) for v in values]
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
        "runs": len(values),
    }


def run_seed(application, seed, folder, train_args):
    metrics_path = os.path.join(folder, "metrics.json")
    if os.path.exists(metrics_path):
        print(f"seed {seed}: {metrics_path} exists, not trained again")
    else:
        script = os.path.join(
            common.REPO_ROOT, "applications", application, "train.py"
        )
        command = [
            sys.executable,
            script,
            *train_args,
            "--seed",
            str(seed),
            "--output-dir",
            folder,
        ]
        print("running:", " ".join(command), flush=True)
        start = time.perf_counter()
        subprocess.run(command, check=True)
        print(f"seed {seed}: {time.perf_counter() - start:.0f} s", flush=True)
    with open(metrics_path) as f:
        return json.load(f)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--" in argv:
        split = argv.index("--")
        argv, train_args = argv[:split], argv[split + 1 :]
    else:
        train_args = []
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--application", required=True, choices=APPLICATIONS)
    parser.add_argument("--seeds", default="1,2,3", help="Comma-separated.")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument(
        "--metrics", required=True, help="Comma-separated metrics.json keys."
    )
    parser.add_argument(
        "--name", required=True, help="Results file name, without extension."
    )
    args = parser.parse_args(argv)
    seeds = common.parse_ints(args.seeds)
    if not seeds:
        parser.error(f"--seeds needs a seed; received {args.seeds!r}")
    keys = [k for k in args.metrics.split(",") if k]
    runs = {}
    for seed in seeds:
        folder = os.path.join(args.output_dir, f"seed_{seed}")
        metrics = run_seed(args.application, seed, folder, train_args)
        missing = [k for k in keys if k not in metrics]
        if missing:
            raise SystemExit(
                f"{folder}/metrics.json has no {missing}; it has "
                f"{sorted(metrics)}"
            )
        runs[seed] = metrics
    summary = {k: summarize([runs[s][k] for s in seeds]) for k in keys}
    result = {
        "application": args.application,
        "train_args": train_args,
        "backend": os.environ.get("KERAS_BACKEND", "tensorflow"),
        "seeds": seeds,
        "summary": summary,
        "runs": {
            str(s): {
                k: runs[s][k]
                for k in keys + ["train_seconds", "epochs"]
                if k in runs[s]
            }
            for s in seeds
        },
    }
    base = os.path.join(common.RESULTS_DIR, args.name)
    common.write_json(base + ".json", result)
    rows = [
        [
            k,
            f"{v['mean']:.4f} ± {v['std']:.4f}",
            f"{v['min']:.4f}",
            f"{v['max']:.4f}",
            ", ".join(f"{runs[s][k]:.4f}" for s in seeds),
        ]
        for k, v in summary.items()
    ]
    table = common.markdown_table(
        ["metric", "mean ± std", "min", "max", f"seeds {args.seeds}"], rows
    )
    command = " ".join(["python benchmarks/seeds.py", *argv, "--", *train_args])
    with open(base + ".md", "w") as f:
        f.write(f"`{command}` (backend {result['backend']})\n\n{table}\n")
    print(table)
    return result


if __name__ == "__main__":
    main()
