"""Exports a trained translator as a SavedModel for TensorFlow Serving.

Usage:
    python applications/translation/export.py --run-dir runs/translation \
        --export-dir exports/translator [--version 1] [--beam-size 4] \
        [--alpha 0.6] [--max-extra-length 50] [--jit-compile]

Reads `model.keras` and `tokenizer.model` from the run folder (written by
`train.py` on any backend) and writes `EXPORT_DIR/VERSION/`: raw sentences
in (`inputs`), translations and scores out (`outputs`, `scores`), with the
SentencePiece tokenizer, beam search (`serving_default`) and greedy search
(`greedy`) inside the graph. See the Serving section of the README.
`--jit-compile` compiles the searches with XLA (2-3x less CPU time per
sentence; TF Serving on CPU then needs `--xla_cpu_compilation_enabled=true`).
"""

import os
import sys

# Before anything imports TensorFlow: a quiet start (quiet_start.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import quiet_start  # noqa: E402, F401, I001
from keras_attention import export
from keras_attention.data.translation import TOKENIZER_FILE
from keras_attention.training import cli
from keras_attention.training import runs

# What `--run-dir` must hold.
RUN_FILES = (runs.MODEL_FILE, TOKENIZER_FILE)


def main(argv=None):
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--run-dir",
        default="runs/translation",
        type=cli.run_folder("run_dir", *RUN_FILES),
    )
    parser.add_argument("--export-dir", default="exports/translator")
    parser.add_argument("--version", type=cli.typed(int, "version"), default=1)
    parser.add_argument(
        "--beam-size", type=cli.typed(int, "beam_size"), default=4
    )
    parser.add_argument("--alpha", type=cli.typed(float, "alpha"), default=0.6)
    parser.add_argument(
        "--max-extra-length",
        type=cli.typed(int, "max_extra_length"),
        default=50,
    )
    parser.add_argument(
        "--jit-compile",
        action="store_true",
        help="Compile the searches with XLA (servers with XLA only).",
    )
    args = parser.parse_args(argv)
    with cli.user_errors(parser, argv):
        return export_run(args)


def export_run(args):
    path = export.export_translator(
        args.run_dir,
        args.export_dir,
        version=args.version,
        beam_size=args.beam_size,
        alpha=args.alpha,
        max_extra_length=args.max_extra_length,
        jit_compile=args.jit_compile,
    )
    print(f"Wrote {path}")
    for name, signature in export.signature_summary(path).items():
        print(f"  {name}: {signature}")
    return path


if __name__ == "__main__":
    main()
