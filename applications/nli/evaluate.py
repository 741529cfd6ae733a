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

# A quiet start: TensorFlow's C++ start-up log (CUDA probes, CPU features)
# is noise to a user. TF_CPP_MIN_LOG_LEVEL=3 quiets TensorFlow's own lines;
# the absl lines written while its libraries load ignore every setting, so
# stderr is closed while TensorFlow loads (a failed import still raises).
# A TF_CPP_MIN_LOG_LEVEL set by the user keeps everything.
if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    _stderr, _null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(_null, 2)
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        pass  # a backend without TensorFlow
    finally:
        os.dup2(_stderr, 2)
        os.close(_stderr)
        os.close(_null)

import argparse
import contextlib
import sys

import numpy as np

from keras_attention import data
from keras_attention import visualization
from keras_attention.models.decomposable_attention import ALIGNMENT_LAYER
from keras_attention.models.resan import sampler_inference
from keras_attention.training import runs


def load_run(run_dir):
    config = runs.read_config(run_dir)
    vocabulary = runs.read_vocabulary(run_dir)
    model = runs.load_model(run_dir)
    return config, vocabulary, model


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
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--split", choices=("dev", "test"), default="test")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--examples", type=int, nargs="*", default=[0])
    parser.add_argument(
        "--selection", choices=SELECTION_RULES, default="threshold"
    )
    args = parser.parse_args(argv)

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
        rows = data.load_snli(args.split, data_dir=args.data_dir)
        premises, hypotheses = rows["premise"], rows["hypothesis"]
        labels = rows["label"]
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
