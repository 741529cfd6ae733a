"""Versioned export folders and the route from any backend to TensorFlow.

A SavedModel for TensorFlow Serving is a TensorFlow graph. On the
tensorflow backend the exporters trace the model directly. On jax and
torch they save the model (a `.keras` file, which every backend reads)
with its tokenizer or vocabulary into a temporary run folder and run the
same exporter in a Python subprocess with `KERAS_BACKEND=tensorflow`, so
the exported graph holds the trained weights and only standard TensorFlow
(and TensorFlow Text) ops, whichever backend trained the model.

Run folders are read through `keras_attention.training.runs`.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import keras

from keras_attention.utils.validation import check_positive_int


def version_path(export_dir, version):
    """`export_dir/<version>`, the layout TensorFlow Serving watches.

    Raises a `ValueError` for a version that is not a positive int or a
    version folder that already holds files (a served version must not
    change under the server).
    """
    check_positive_int("version", version)
    path = os.path.join(os.fspath(export_dir), str(version))
    if os.path.isdir(path) and os.listdir(path):
        raise ValueError(
            f"Version {version} already exists in '{export_dir}'; export "
            f"to a new version. Received: version={version}"
        )
    return path


def save_version(module, path, signatures):
    """`tf.saved_model.save` to a version folder, never seen half-written.

    The SavedModel is written to a hidden sibling folder
    (`.<version>.tmp-<random>`, which TensorFlow Serving ignores: it loads
    folders named by integers) and renamed to `path` once complete. A
    process killed during the save leaves no version folder (at worst a
    hidden temporary one), so a server never loads a partial version and a
    later export to the same version is not refused.

    Returns:
        `path`.
    """
    import tensorflow as tf

    path = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        tf.saved_model.save(module, tmp, signatures=signatures)
        if os.path.isdir(path):
            os.rmdir(path)  # empty: `version_path` refuses a full one
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def needs_tensorflow_process():
    return keras.backend.backend() != "tensorflow"


def export_elsewhere(function_name, source, export_dir, options, write):
    """The exporters' shared entry: where this backend cannot write a
    SavedModel, the export runs in a TensorFlow process.

    On tensorflow it returns `None` and the caller exports itself. On the
    other backends it returns the version folder that
    `keras_attention.export.<function_name>` wrote in a subprocess on the
    tensorflow backend, with `options` as its keyword arguments. A `source`
    that is a path goes to the subprocess as it is; a model object is first
    written to a temporary folder by `write(folder)`, which returns the
    path the subprocess reads (the `.keras` file or the run folder).
    """
    if not needs_tensorflow_process():
        return None
    if isinstance(source, (str, os.PathLike)):
        return export_in_tensorflow(
            function_name, os.fspath(source), export_dir, options
        )
    with temporary_run_dir() as folder:
        return export_in_tensorflow(
            function_name, write(folder), export_dir, options
        )


def export_in_tensorflow(function_name, run_dir, export_dir, options):
    """Runs `keras_attention.export.<function_name>` on the tensorflow
    backend in a subprocess; returns the version folder it wrote."""
    code = (
        "import json, sys\n"
        "from keras_attention import export\n"
        "function = getattr(export, sys.argv[1])\n"
        "path = function(sys.argv[2], sys.argv[3], **json.loads(sys.argv[4]))\n"
        "print('EXPORTED=' + path)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (root, env.get("PYTHONPATH")) if p
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            function_name,
            os.fspath(run_dir),
            os.fspath(export_dir),
            json.dumps(options),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"Export on the tensorflow backend failed:\n{result.stderr[-4000:]}"
        )
    for line in result.stdout.splitlines():
        if line.startswith("EXPORTED="):
            return line[len("EXPORTED=") :]
    raise RuntimeError(f"Export printed no path:\n{result.stdout[-2000:]}")


def temporary_run_dir():
    return tempfile.TemporaryDirectory(prefix="keras_attention_export_")
