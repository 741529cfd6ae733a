"""BLEU against training minutes, from the per-epoch checkpoints of runs.

Usage:
    python applications/translation/learning_curve.py \
        --run-dir runs/a [--run-dir runs/b ...] [--data-dir DIR] \
        [--split test2016] [--every 1] [--limit N] [--figure curve.png]

`train.py` saves `checkpoints/epoch-NNN.weights.h5` after every epoch
(the epoch cut by the time limit included) and each epoch's wall seconds in
`training.json` (`epoch_seconds`). This script
loads each checkpoint into the run's model, translates the split with beam
search and plots SacreBLEU against the training minutes at which the
checkpoint was written, with the run's final model (`model.keras`, the
averaged checkpoints) as a star at the end of its line.

Each result is kept in `RUN/learning_curve.json` under its settings, so a
rerun decodes only the points it has not got. `--every k` evaluates every
k-th epoch (the last always). `--dtype float32` decodes in float32 what was
trained under a mixed policy (default: the policy the run was trained in).
"""

import os
import sys

# Before anything imports TensorFlow: a quiet start (quiet_start.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import quiet_start  # noqa: E402, F401, I001
import json
import re
import time

from keras_attention import data
from keras_attention import decoding
from keras_attention import metrics
from keras_attention.data import multi30k
from keras_attention.data.translation import TOKENIZER_FILE
from keras_attention.training import cli
from keras_attention.training import runs
from keras_attention.utils import files

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evaluate  # noqa: E402  (also registers the model's classes)

CACHE_FILE = "learning_curve.json"
# What each `--run-dir` must hold.
RUN_FILES = (runs.MODEL_FILE, TOKENIZER_FILE, runs.TRAINING_FILE, "checkpoints")
CHECKPOINT = re.compile(r"epoch-(\d+)\.weights\.h5$")


def checkpoint_minutes(run_dir):
    """`[(label, weights file, training minutes)]` of a run, in order.

    The minutes of epoch k are the sum of the first k `epoch_seconds`.

    Raises:
        DataError: if `training.json` has no `epoch_seconds` for every
            checkpoint (a run resumed after an interruption lists only its
            last process's epochs, and older runs none).
    """
    info = runs.read_json(run_dir, runs.TRAINING_FILE)
    if not info:
        raise data.DataError(
            f"Argument `run_dir` must hold a {runs.TRAINING_FILE} written by "
            f"train.py. Received: run_dir={run_dir!r}"
        )
    seconds = info.get("epoch_seconds")
    if seconds is None or info.get("first_epoch", 1) != 1:
        raise data.DataError(
            f"The run in {run_dir!r} has no per-epoch times for all its "
            "epochs (it predates them or was resumed), so its checkpoints "
            "cannot be placed on a time axis."
        )
    folder = os.path.join(run_dir, "checkpoints")
    points = []
    for name in sorted(os.listdir(folder)):
        match = CHECKPOINT.match(name)
        if not match:
            continue
        epoch = int(match.group(1))
        if epoch > len(seconds):
            raise data.DataError(
                f"Checkpoint {name} of {run_dir!r} is past the "
                f"{len(seconds)} epoch times in {runs.TRAINING_FILE}."
            )
        minutes = sum(seconds[:epoch]) / 60.0
        points.append((f"epoch {epoch}", os.path.join(folder, name), minutes))
    return points


def select_every(points, every):
    """Every `every`-th point, always keeping the last."""
    if every < 1:
        raise ValueError(
            f"Argument `every` must be at least 1. Received: every={every}"
        )
    kept = [p for i, p in enumerate(points, start=1) if i % every == 0]
    if points and (not kept or kept[-1] is not points[-1]):
        kept.append(points[-1])
    return kept


def bleu_point(model, tokenizer, sources, references, beam_size, alpha):
    start = time.monotonic()
    hypotheses = decoding.translate(
        model, tokenizer, sources, beam_size=beam_size, alpha=alpha
    )
    return {
        "sacrebleu": round(metrics.sacre_bleu(hypotheses, references), 2),
        "tokenized_bleu": round(
            metrics.tokenized_bleu(hypotheses, references, "de"), 2
        ),
        "chrf": round(metrics.chrf(hypotheses, references), 2),
        "decoding_seconds": round(time.monotonic() - start, 1),
    }


def run_curve(run_dir, args):
    """Evaluates the run's selected checkpoints (and its final model),
    reading what `RUN/learning_curve.json` already holds."""
    points = select_every(checkpoint_minutes(run_dir), args.every)
    cache_path = os.path.join(run_dir, CACHE_FILE)
    cache = {}
    if os.path.isfile(cache_path):
        with open(cache_path) as f:
            cache = json.load(f)
    settings = (
        f"{args.split}|beam={args.beam_size}|alpha={args.alpha}|"
        f"limit={args.limit}|dtype={args.dtype or 'trained'}"
    )
    results = cache.setdefault(settings, {})
    sources, references = data.load_multi30k(args.split, data_dir=args.data_dir)
    if args.limit:
        sources, references = sources[: args.limit], references[: args.limit]
    info = runs.read_json(run_dir, runs.TRAINING_FILE)
    # The final model (`model.keras`, weights `None`: as loaded) last.
    todo = [p for p in points if p[0] not in results]
    if "final model" not in results:
        todo.append(("final model", None, info["training_time_s"] / 60.0))
    if todo:
        model, tokenizer = evaluate.load_translator(run_dir, args.dtype)
        final_weights = model.get_weights()
    for label, path, minutes in todo:
        if path is None:
            model.set_weights(final_weights)
        else:
            model.load_weights(path)
        point = bleu_point(
            model, tokenizer, sources, references, args.beam_size, args.alpha
        )
        results[label] = dict(point, minutes=round(minutes, 2))
        print(f"{run_dir} {label} ({minutes:.1f} min): {results[label]}")
        _write_json(cache_path, cache)
    ordered = [(label, results[label]) for label, _, _ in points]
    return ordered, results["final model"], info


def _write_json(path, values):
    text = json.dumps(runs.strict_json(values), indent=2, allow_nan=False)
    files.atomic_write_text(path, text + "\n")


def run_label(info):
    config = info.get("config", {})
    precision = info.get("dtype_policy") or {
        "none": "float32",
        "bfloat16": "mixed_bfloat16",
        "float16": "mixed_float16",
    }.get(config.get("mixed_precision"), config.get("mixed_precision"))
    return f"{info.get('preset')}, {precision}, {info.get('backend')}"


def plot(curves, path, split):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    for label, points, final in curves:
        minutes = [p["minutes"] for _, p in points]
        bleu = [p["sacrebleu"] for _, p in points]
        (line,) = axes.plot(
            minutes, bleu, marker="o", markersize=3, label=label
        )
        axes.plot(
            [final["minutes"]],
            [final["sacrebleu"]],
            marker="*",
            markersize=11,
            color=line.get_color(),
            linestyle="none",
        )
    axes.set_xlabel("training minutes (2-core CPU)")
    axes.set_ylabel(f"{split} SacreBLEU")
    axes.set_title("Multi30k En-De, beam 4; star: final (averaged) model")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None):
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--run-dir",
        action="append",
        required=True,
        type=cli.run_folder("run_dir", *RUN_FILES),
    )
    parser.add_argument("--label", action="append", default=None)
    parser.add_argument(
        "--data-dir", default=None, type=cli.typed(str, "data_dir")
    )
    parser.add_argument("--split", default="test2016", choices=multi30k.SPLITS)
    parser.add_argument(
        "--beam-size", type=cli.typed(int, "beam_size"), default=4
    )
    parser.add_argument("--alpha", type=cli.typed(float, "alpha"), default=0.6)
    parser.add_argument("--every", type=cli.typed(int, "every"), default=1)
    parser.add_argument("--limit", type=cli.typed(int, "limit"), default=None)
    parser.add_argument("--dtype", default=None, choices=("float32",))
    parser.add_argument("--figure", default=None)
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args(argv)
    if args.label and len(args.label) != len(args.run_dir):
        parser.error(
            f"--label must be given once per --run-dir: {len(args.label)} "
            f"labels for {len(args.run_dir)} runs"
        )
    with cli.user_errors(parser, argv):
        return curves_of(args)


def curves_of(args):
    curves, summary = [], []
    for i, run_dir in enumerate(args.run_dir):
        points, final, info = run_curve(run_dir, args)
        label = args.label[i] if args.label else run_label(info)
        curves.append((label, points, final))
        summary.append(
            {
                "run_dir": run_dir,
                "label": label,
                "points": dict(points),
                "final_model": final,
            }
        )
    for label, points, final in curves:
        print(f"\n{label}")
        print("| checkpoint | minutes | SacreBLEU | tokenized BLEU | chrF |")
        print("|---|---:|---:|---:|---:|")
        for name, p in points + [("final model", final)]:
            print(
                f"| {name} | {p['minutes']:.1f} | {p['sacrebleu']:.2f} | "
                f"{p['tokenized_bleu']:.2f} | {p['chrf']:.2f} |"
            )
    if args.figure:
        plot(curves, args.figure, args.split)
        print(f"Wrote {args.figure}")
    if args.json_out:
        _write_json(args.json_out, summary)
    return summary


if __name__ == "__main__":
    main()
