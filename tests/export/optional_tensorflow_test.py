"""`keras_attention.export` needs TensorFlow, and only it does: the package
imports without it, and the subpackage's error names the extra."""

import os
import subprocess
import sys

PROGRAM = """
import sys
sys.modules["tensorflow"] = None  # as if TensorFlow were not installed
import keras_attention
assert "keras_attention.export" not in sys.modules
try:
    import keras_attention.export
except ImportError as error:
    print(error)
"""


def test_export_without_tensorflow_names_the_extra():
    # The numpy backend: keras itself then runs without TensorFlow.
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env={**os.environ, "KERAS_BACKEND": "numpy"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "SavedModel export needs `tensorflow`, which is not installed. "
        "Install it with: pip install 'keras-attention-layers[tensorflow]'"
    )
