"""Exports an NLI classifier as a SavedModel for TensorFlow Serving.

Usage:
    python applications/nli/export.py --run-dir runs/nli \
        --export-dir exports/nli [--version 1] [--max-length N]

Reads `model.keras`, `vocabulary.txt` and `config.json` from the run
folder (written by `train.py` on any backend) and writes
`EXPORT_DIR/VERSION/`: `premise`, `hypothesis` in, `probabilities` and
`label` out, with the word tokenizer and the vocabulary inside the
graph. Sentences are cut to `--max-length` words (default: the run's
`max_length`). See the Serving section of
`applications/translation/README.md`.
"""

import os
import sys

# Before anything imports TensorFlow: a quiet start (quiet_start.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import quiet_start  # noqa: E402, F401, I001
from keras_attention import export
from keras_attention.training import cli
from keras_attention.training import runs

# What `--run-dir` must hold.
RUN_FILES = (runs.MODEL_FILE, runs.VOCABULARY_FILE, runs.CONFIG_FILE)


def main(argv=None):
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--run-dir",
        default="runs/nli",
        type=cli.run_folder("run_dir", *RUN_FILES),
    )
    parser.add_argument("--export-dir", default="exports/nli")
    parser.add_argument("--version", type=cli.typed(int, "version"), default=1)
    parser.add_argument(
        "--max-length", type=cli.typed(int, "max_length"), default=None
    )
    args = parser.parse_args(argv)
    with cli.user_errors(parser, argv):
        return export_run(args)


def export_run(args):
    path = export.export_classifier(
        args.run_dir,
        args.export_dir,
        max_length=args.max_length,
        version=args.version,
    )
    print(f"Wrote {path}")
    for name, signature in export.signature_summary(path).items():
        print(f"  {name}: {signature}")
    return path


if __name__ == "__main__":
    main()
