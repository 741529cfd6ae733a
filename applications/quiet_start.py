"""Silences TensorFlow's C++ start-up log; imported by every application
script before anything that imports TensorFlow (keras does).

The CUDA probes and CPU-feature lines TensorFlow writes while it loads are
noise to a user. `TF_CPP_MIN_LOG_LEVEL=3` quiets TensorFlow's own lines;
the absl lines written while its libraries load ignore every setting, so
stderr is closed while TensorFlow loads (a failed import still raises on
the later `import keras`). A `TF_CPP_MIN_LOG_LEVEL` set by the user keeps
everything.
"""

import os

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
