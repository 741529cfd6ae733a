"""Atomic file writes: a crash never leaves a half-written file behind.

A file is written under a temporary name in its own folder and renamed over
the final name with `os.replace`, which is atomic on POSIX and Windows for
paths on one file system. A process killed mid-write leaves the previous
file (or no file) and, at worst, a stray `*.tmp-*` file that no loader
looks for.
"""

import contextlib
import os
import uuid


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path next to `path`; renames it to `path` on exit.

    The temporary name keeps the final suffix (Keras picks the format from
    it, e.g. `.keras` or `.weights.h5`). If the body raises, the temporary
    file is removed and `path` is left as it was.

    Example:

    ```python
    with atomic_path("runs/model.keras") as tmp:
        model.save(tmp)
    ```
    """
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    stem, suffix = _split_suffix(name)
    tmp = os.path.join(folder, f".{stem}.tmp-{uuid.uuid4().hex[:8]}{suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def atomic_save(model, path, weights_only=False):
    """`model.save(path)` (or `save_weights`) through a temporary file.

    Args:
        model: a Keras model.
        path: the final `.keras` (or `.weights.h5` with `weights_only`) path.
        weights_only: bool. Save only the weights.

    Returns:
        `path`.
    """
    with atomic_path(path) as tmp:
        if weights_only:
            model.save_weights(tmp)
        else:
            model.save(tmp)
    return path


def atomic_write_text(path, text):
    """Writes `text` (UTF-8) to `path` through a temporary file."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    return path


def _split_suffix(name):
    for suffix in (".weights.h5", ".weights.json"):
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix
    stem, suffix = os.path.splitext(name)
    return stem, suffix
