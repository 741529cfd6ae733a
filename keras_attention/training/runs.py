"""The run folder a training program writes, and reading it back.

A run folder holds the trained model and what is needed to use it:

```
run_dir/
  model.keras        # the trained model (MODEL_FILE)
  config.json        # the settings it was trained with (CONFIG_FILE)
  metrics.json       # its results (METRICS_FILE)
  vocabulary.txt     # word models: one word per line, line i = id i
  tokenizer.model    # translation: the SentencePiece model
  training.json      # translation: time, steps, tokenizer fingerprint
```

Every file is written through `keras_attention.utils.files` (a temporary
file renamed over the final name), so a process killed mid-write never
leaves a half-written file that a later step or a resumed run would read.
"""

import dataclasses
import json
import math
import os

import keras
import numpy as np

from keras_attention.utils import files

MODEL_FILE = "model.keras"
CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.json"
VOCABULARY_FILE = "vocabulary.txt"
TRAINING_FILE = "training.json"


def strict_json(values):
    """`values` with every NaN or infinite float replaced by `None`.

    Strict JSON (RFC 8259) has no NaN or Infinity, and parsers other than
    Python's reject them. Each value replaced is said in a `"notes"` entry
    of the top-level dict, keyed by its path (`"a.b[2]"`), unless a note
    for that path is already there (a producer's own reason wins).

    Args:
        values: a dict, or a dataclass, of JSON-able values (numpy scalars
            are converted).

    Returns:
        A new dict; `values` is left as it is.
    """
    if dataclasses.is_dataclass(values) and not isinstance(values, type):
        values = dataclasses.asdict(values)
    notes = {}

    def clean(value, path):
        if isinstance(value, dict):
            return {
                k: clean(v, f"{path}.{k}" if path else str(k))
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [clean(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            notes[path] = (
                f"{value} is not a number strict JSON can hold: written as null"
            )
            return None
        return value

    cleaned = clean(values, "")
    if notes and isinstance(cleaned, dict):
        given = cleaned.get("notes")
        if isinstance(given, dict):
            notes.update(given)
        cleaned["notes"] = notes
    return cleaned


def write_json(run_dir, name, values, sort_keys=False):
    """Writes `values` (a dict, or a dataclass) to `run_dir/name` as strict
    JSON: a NaN or infinite number becomes `null` with a `"notes"` entry
    saying so (`strict_json`).

    Returns:
        The path written.
    """
    text = json.dumps(
        strict_json(values), indent=2, sort_keys=sort_keys, allow_nan=False
    )
    return files.atomic_write_text(os.path.join(run_dir, name), text)


def read_json(run_dir, name):
    """The JSON object in `run_dir/name`, or `{}` if there is no file."""
    path = os.path.join(run_dir, name)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_config(run_dir, config):
    """Writes the run's settings (a dataclass or dict) to `config.json`."""
    return write_json(run_dir, CONFIG_FILE, config)


def read_config(run_dir):
    """The run's `config.json` as a dict (empty if there is none)."""
    return read_json(run_dir, CONFIG_FILE)


def write_metrics(run_dir, metrics, sort_keys=False):
    """Writes the run's results (a dict) to `metrics.json`."""
    return write_json(run_dir, METRICS_FILE, metrics, sort_keys=sort_keys)


def read_metrics(run_dir):
    """The run's `metrics.json` as a dict (empty if there is none)."""
    return read_json(run_dir, METRICS_FILE)


def vocabulary_path(run_dir_or_path):
    """`run_dir/vocabulary.txt` for a folder; a file path as it is."""
    path = os.fspath(run_dir_or_path)
    if os.path.isdir(path):
        return os.path.join(path, VOCABULARY_FILE)
    return path


def write_vocabulary(run_dir_or_path, vocabulary):
    """Writes the words, one per line (line `i` is id `i`).

    Args:
        run_dir_or_path: a run folder (the file is its `vocabulary.txt`)
            or the path of the file.
        vocabulary: list of str.

    Returns:
        The path written.
    """
    return files.atomic_write_text(
        vocabulary_path(run_dir_or_path), "\n".join(vocabulary) + "\n"
    )


def read_vocabulary(run_dir_or_path):
    """The words of a `vocabulary.txt` (one per line), index = id.

    Args:
        run_dir_or_path: a run folder or the path of the file.

    Raises:
        ValueError: If there is no such file.
    """
    path = vocabulary_path(run_dir_or_path)
    if not os.path.isfile(path):
        raise ValueError(
            f"No vocabulary file at '{path}'. Received: "
            f"vocabulary={os.fspath(run_dir_or_path)!r}"
        )
    with open(path, encoding="utf-8") as f:
        words = f.read().split("\n")
    if words and words[-1] == "":
        words = words[:-1]
    return words


def load_model(run_dir, compile=False, safe_mode=True, file_name=MODEL_FILE):
    """Loads `run_dir/model.keras` with the package's classes registered.

    Args:
        run_dir: the run folder.
        compile: bool. Restore the optimizer, loss and metrics too.
            Defaults to `False` (inference and export need none).
        safe_mode: bool. Refuse lambdas in the file. Defaults to `True`.
        file_name: the model file in the folder. Defaults to `model.keras`
            (the relatedness runs also write `last.keras`).

    Raises:
        ValueError: If the folder holds no such file.
    """
    # Registers the layers, models, losses, metrics and schedules by name.
    from keras_attention import layers  # noqa: F401
    from keras_attention import losses  # noqa: F401
    from keras_attention import metrics  # noqa: F401
    from keras_attention import models  # noqa: F401
    from keras_attention import schedules  # noqa: F401

    path = os.path.join(os.fspath(run_dir), file_name)
    if not os.path.isfile(path):
        raise ValueError(
            f"No {file_name} in the run folder. Received: "
            f"run_dir_or_model={os.fspath(run_dir)!r}"
        )
    return keras.saving.load_model(path, compile=compile, safe_mode=safe_mode)


def summary(run_dir, headline, seconds, names=(MODEL_FILE, METRICS_FILE)):
    """The few lines a training run ends with: what it reached, in how long,
    and where its files are (the full figures stay in `metrics.json`).

    Args:
        run_dir: the run folder.
        headline: dict of the run's main figures, e.g.
            `{"test accuracy": 0.81}` (floats are shown with 4 decimals;
            `None` as "n/a").
        seconds: the training time in seconds (`None`: not known).
        names: the files of `run_dir` to list (those that exist are).

    Returns:
        The text, one line per item, without a final newline.

    Example:

    >>> print(summary("runs/x", {"test accuracy": 0.8123}, 75.0, names=()))
    Done: test accuracy 0.8123; 1.2 min of training.
    """

    def shown(value):
        if value is None:
            return "n/a"
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    figures = ", ".join(f"{name} {shown(v)}" for name, v in headline.items())
    took = "" if seconds is None else f"; {seconds / 60:.1f} min of training"
    lines = [f"Done: {figures}{took}."]
    paths = [os.path.join(run_dir, name) for name in names]
    paths = [path for path in paths if os.path.exists(path)]
    width = max((len(os.path.basename(p)) for p in paths), default=0)
    for path in paths:
        lines.append(f"  {os.path.basename(path) + ':':<{width + 1}} {path}")
    return "\n".join(lines)
