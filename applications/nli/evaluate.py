"""Evaluates a trained NLI model and draws alignment heatmaps.

Reads `model.keras`, `vocabulary.txt` and `config.json` from a training
run's output directory, prints the accuracy on `--split` (for ReSAN
also the samplers' selection percentage at inference, under the rule of
`--selection`: `threshold`, the layers' own, keep probability > 0.5;
`sampled`, one draw per token, as the authors' code evaluates; `all`,
every real token, which measures what the selection adds), and for a
decomposable attention model writes `alignment_<n>.png` heatmaps of the
soft alignment between premise and hypothesis for `--examples` pairs.

Usage:

    python applications/nli/evaluate.py --run-dir runs/da_intra_snli \\
        --split test --examples 0 5 --data-dir DATA
"""

import os
import sys

# Before anything imports TensorFlow: a quiet start (quiet_start.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import quiet_start  # noqa: E402, F401, I001
import contextlib

import numpy as np

from keras_attention import data
from keras_attention import visualization
from keras_attention.models.decomposable_attention import ALIGNMENT_LAYER
from keras_attention.models.resan import sampler_inference
from keras_attention.training import cli
from keras_attention.training import runs


def load_run(run_dir):
    config = runs.read_config(run_dir)
    vocabulary = runs.read_vocabulary(run_dir)
    model = runs.load_model(run_dir)
    return config, vocabulary, model


# What `--run-dir` must hold.
RUN_FILES = (runs.MODEL_FILE, runs.VOCABULARY_FILE, runs.CONFIG_FILE)

# `--selection` values and the samplers' `inference` rules they set.
SELECTION_RULES = {"threshold": "threshold", "sampled": "sample", "all": "all"}


def selection_rule(model, selection):
    """The block in which `model` evaluates under `--selection`."""
    if selection == "threshold":
        return contextlib.nullcontext(model)  # The layers' own.
    return sampler_inference(model, SELECTION_RULES[selection])


def encode(sentences, index):
    tokens = [data.tokenize(s) for s in sentences]
    return tokens, data.word_ids(tokens, index)[0]


def main(argv=None):
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--run-dir", required=True, type=cli.run_folder("run_dir", *RUN_FILES)
    )
    parser.add_argument("--split", choices=("dev", "test"), default="test")
    parser.add_argument(
        "--data-dir", default=None, type=cli.typed(str, "data_dir")
    )
    parser.add_argument(
        "--examples", type=cli.typed(int, "examples"), nargs="*", default=[0]
    )
    parser.add_argument(
        "--selection", choices=SELECTION_RULES, default="threshold"
    )
    args = parser.parse_args(argv)
    with cli.user_errors(parser, argv):
        return evaluate_run(parser, args)


def evaluate_run(parser, args):
    config, vocabulary, model = load_run(args.run_dir)
    if args.selection != "threshold" and config["model"] != "resan":
        parser.error(
            f"--selection {args.selection} needs a ReSAN run. Received: "
            f"--run-dir {args.run_dir} (model {config['model']!r})"
        )
    index = data.vocabulary_index(vocabulary)
    if config["dataset"] == "sick":
        rows = data.load_sick(args.split, data_dir=args.data_dir)
        premises, hypotheses = rows["sentence_a"], rows["sentence_b"]
        labels = rows["entailment"]
    else:
        # Dev and test from the source of the run's training pairs (runs
        # from before `train_data` existed trained on the subset).
        source = data.snli_evaluation_source(config.get("train_data", "subset"))
        rows = data.load_snli(args.split, data_dir=args.data_dir, source=source)
        premises, hypotheses = rows["premise"], rows["hypothesis"]
        labels = rows["label"]
    too_far = [n for n in args.examples if n >= len(labels)]
    if too_far:
        parser.error(
            f"--examples must be below the {len(labels)} pairs of the "
            f"{args.split} split. Received: --examples {too_far[0]}"
        )
    premise_tokens, premise_ids = encode(premises, index)
    hypothesis_tokens, hypothesis_ids = encode(hypotheses, index)
    inputs = {"premise": premise_ids, "hypothesis": hypothesis_ids}
    with selection_rule(model, args.selection):
        # Length-bucketed batches, as in training: padded to the split's
        # longest sentence, most of the attention work would be padding.
        outputs = data.predict_in_buckets(model, inputs, batch_size=256)
    results = {}
    if isinstance(outputs, dict):
        # ReSAN: class probabilities beside the samplers' outputs.
        results["selection_percentage"] = float(
            np.mean(outputs["selection_percentage"])
        )
        outputs = outputs["probabilities"]
    predictions = np.argmax(outputs, axis=-1)
    results["accuracy"] = float(
        np.mean(predictions == data.encode_labels(labels))
    )
    print(
        f"{args.split} accuracy: {results['accuracy']:.4f} "
        f"({len(labels)} pairs)"
    )
    if "selection_percentage" in results:
        print(
            f"selection percentage at inference ({args.selection}; head "
            "fraction x dependent fraction, mean over sentences): "
            f"{results['selection_percentage']:.4f}"
        )

    if ALIGNMENT_LAYER not in [layer.name for layer in model.layers]:
        return results
    import matplotlib.pyplot as plt

    for n in args.examples:
        weights = visualization.alignment_weights(
            model, premise_ids[n : n + 1], hypothesis_ids[n : n + 1]
        )
        predicted = data.LABELS[predictions[n]]
        ax = visualization.plot_alignment(
            weights[0],
            premise_tokens[n],
            hypothesis_tokens[n],
            title=f"gold: {labels[n]}, predicted: {predicted}",
        )
        path = os.path.join(args.run_dir, f"alignment_{n}.png")
        ax.figure.savefig(path, dpi=120)
        plt.close(ax.figure)
        print(f"wrote {path}")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
