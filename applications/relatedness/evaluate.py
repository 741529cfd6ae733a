"""Evaluates a trained relatedness model on SICK: correlation and calibration.

Reads a model file, `vocabulary.txt` and `config.json` from a training
run's output directory and prints, for `--split`, the Pearson r, Spearman
rho and MSE of the predicted scores, the token samplers' selection rate,
and the calibration: the mean predicted and gold scores, their standard
deviations, and the least-squares line `gold ~ slope * predicted +
intercept` with the MSE that line would leave (a well-calibrated model has
slope 1, intercept 0, and an MSE close to it). `--json-out` writes the
same numbers.

Usage:

    python applications/relatedness/evaluate.py --run-dir runs/relatedness \\
        --split test --data-dir DATA
    # the model at the end of training instead of the best dev epoch:
    python applications/relatedness/evaluate.py --run-dir runs/relatedness \\
        --model-file last.keras
"""

import os
import sys

# Before anything imports TensorFlow: a quiet start (quiet_start.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import quiet_start  # noqa: E402, F401, I001
import json

import numpy as np
from scipy import stats

from keras_attention import data
from keras_attention.training import cli
from keras_attention.training import runs

# What `--run-dir` must hold.
RUN_FILES = (runs.VOCABULARY_FILE, runs.CONFIG_FILE)

SPLITS = {"dev": "trial", "test": "test"}


def scores_and_selection(model, x, batch_size=256):
    outputs = data.predict_in_buckets(model, x, batch_size=batch_size)
    predicted = np.asarray(outputs["score"], "float64")
    return predicted, float(np.mean(outputs["selection_percentage"]))


def calibration(predicted, gold):
    """Correlations, MSE and the least-squares line of gold on predicted."""
    gold = np.asarray(gold, "float64")
    slope, intercept = np.polyfit(predicted, gold, 1)
    return {
        "pearson": float(stats.pearsonr(predicted, gold)[0]),
        "spearman": float(stats.spearmanr(predicted, gold)[0]),
        "mse": float(np.mean((predicted - gold) ** 2)),
        "mean_predicted": float(predicted.mean()),
        "mean_gold": float(gold.mean()),
        "std_predicted": float(predicted.std()),
        "std_gold": float(gold.std()),
        "slope": float(slope),
        "intercept": float(intercept),
        "mse_after_linear_fit": float(
            np.mean((slope * predicted + intercept - gold) ** 2)
        ),
    }


def main(argv=None):
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--run-dir", required=True, type=cli.run_folder("run_dir", *RUN_FILES)
    )
    parser.add_argument("--model-file", default=runs.MODEL_FILE)
    parser.add_argument("--split", choices=sorted(SPLITS), default="test")
    parser.add_argument(
        "--data-dir", default=None, type=cli.typed(str, "data_dir")
    )
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.run_dir, args.model_file)):
        parser.error(
            f"--model-file must name a file of the run folder "
            f"{args.run_dir!r}. Received: --model-file {args.model_file}"
        )
    with cli.user_errors(parser, argv):
        return evaluate_run(args)


def evaluate_run(args):
    config = runs.read_config(args.run_dir)
    index = data.vocabulary_index(runs.read_vocabulary(args.run_dir))
    model = runs.load_model(args.run_dir, file_name=args.model_file)
    rows = data.load_sick(SPLITS[args.split], data_dir=args.data_dir)
    x = {
        name: data.word_ids(rows[name], index, max_length=config["max_length"])[
            0
        ]
        for name in ("sentence_a", "sentence_b")
    }
    predicted, selection = scores_and_selection(model, x)
    result = calibration(predicted, rows["relatedness"])
    result.update(
        {
            "selection_rate": selection,
            "split": args.split,
            "pairs": len(predicted),
            "model_file": args.model_file,
        }
    )
    for key, value in result.items():
        shown = f"{value:.4f}" if isinstance(value, float) else value
        print(f"{key}: {shown}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(runs.strict_json(result), f, indent=2, allow_nan=False)
            f.write("\n")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
