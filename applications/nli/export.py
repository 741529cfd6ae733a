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
    parser.add_argument("--run-dir", default="runs/nli")
    parser.add_argument("--export-dir", default="exports/nli")
    parser.add_argument("--version", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=None)
    args = parser.parse_args(argv)
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
