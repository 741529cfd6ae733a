"""Checkpoint files after training: the newest ones, and their average."""

import glob
import os
import re

import numpy as np

__all__ = [
    "average_checkpoints",
    "last_checkpoints",
]


def average_checkpoints(model, paths):
    """Loads the element-wise mean of several weight files into `model`.

    Averaging the last few checkpoints is how the paper's reported models
    were made (section 6.1: the last 5 for base, the last 20 for big).

    Args:
        model: a built model with the checkpoints' architecture.
        paths: list of `.weights.h5` files written by `model.save_weights`
            (for example by `keras.callbacks.ModelCheckpoint` with
            `save_weights_only=True`).

    Returns:
        `model`, holding the averaged weights.

    Raises:
        ValueError: If `paths` is empty.
    """
    paths = list(paths)
    if not paths:
        raise ValueError(
            "average_checkpoints needs at least one weight file. "
            f"Received: paths={paths!r}"
        )
    total = None
    for path in paths:
        model.load_weights(path)
        weights = [np.asarray(w, dtype="float64") for w in model.get_weights()]
        if total is None:
            total = weights
        else:
            total = [t + w for t, w in zip(total, weights)]
    reference = model.get_weights()
    model.set_weights(
        [(t / len(paths)).astype(r.dtype) for t, r in zip(total, reference)]
    )
    return model


def last_checkpoints(directory, k, pattern="*.weights.h5"):
    """The `k` newest weight files in `directory`, by the epoch number in
    their name (or by modification time when names carry no number)."""

    def key(path):
        # The number in the name before its suffixes (the "5" of ".h5" is
        # no epoch).
        numbers = re.findall(r"\d+", os.path.basename(path).split(".")[0])
        return (int(numbers[-1]) if numbers else -1, os.path.getmtime(path))

    paths = sorted(glob.glob(os.path.join(directory, pattern)), key=key)
    return paths[-k:] if k > 0 else []
