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

from keras_attention import export


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", default="runs/translation")
    parser.add_argument("--export-dir", default="exports/translator")
    parser.add_argument("--version", type=int, default=1)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--max-extra-length", type=int, default=50)
    parser.add_argument(
        "--jit-compile",
        action="store_true",
        help="Compile the searches with XLA (servers with XLA only).",
    )
    args = parser.parse_args(argv)
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
