"""Upgrading files saved by earlier releases (`keras_attention.saving`).

Release 0.2 gave `MultiHeadAttention` Keras's weight-file layout. Its
query, key, value and output projections keep their paths, so files saved
by release 0.1 load unchanged; only the gate projection (`use_gate=True`)
moved, from `gate_dense` to Keras's `_gate_dense`. A release-0.1 file with a
gated layer fails to load ("Layer 'gate' expected 2 variables, but received
0"); `upgrade_saved_file` rewrites it once.
"""

import io
import os
import shutil
import zipfile

import h5py

from keras_attention.utils.files import atomic_path

# Weight-file groups renamed since release 0.1, under a MultiHeadAttention
# (recognised by its query projection beside them).
_RENAMED = {"gate_dense": "_gate_dense"}
_WEIGHTS_IN_ARCHIVE = "model.weights.h5"


def upgrade_saved_file(path, output_path=None):
    """Rewrites a `.keras` or `.weights.h5` file of release 0.1 for 0.2.

    Renames the gate projection of every gated `MultiHeadAttention` to the
    path Keras's layer uses. Files with nothing to rename are copied as they
    are. The output is written atomically.

    Args:
        path: str. A `.keras` archive or a `.weights.h5` file.
        output_path: str. Where to write the upgraded file. Defaults to
            `path` (upgrade in place).

    Returns:
        int. The number of renamed groups.

    Example:

    ```python
    from keras_attention import saving

    saving.upgrade_saved_file("old.keras", "new.keras")
    model = keras.saving.load_model("new.keras")
    ```
    """
    path = os.fspath(path)
    output_path = path if output_path is None else os.fspath(output_path)
    if path.endswith(".keras"):
        return _upgrade_archive(path, output_path)
    if path.endswith(".weights.h5"):
        with atomic_path(output_path) as tmp:
            shutil.copyfile(path, tmp)
            with h5py.File(tmp, "r+") as weights:
                return _rename_groups(weights)
    raise ValueError(
        "Argument `path` must name a `.keras` or `.weights.h5` file. "
        f"Received: path={path!r}"
    )


def _upgrade_archive(path, output_path):
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    if _WEIGHTS_IN_ARCHIVE not in members:
        raise ValueError(
            f"Argument `path` is not a Keras archive: it has no "
            f"`{_WEIGHTS_IN_ARCHIVE}`. Received: path={path!r}"
        )
    buffer = io.BytesIO(members[_WEIGHTS_IN_ARCHIVE])
    with h5py.File(buffer, "r+") as weights:
        renamed = _rename_groups(weights)
    members[_WEIGHTS_IN_ARCHIVE] = buffer.getvalue()
    with atomic_path(output_path) as tmp:
        with zipfile.ZipFile(tmp, "w") as archive:
            for name, data in members.items():
                archive.writestr(name, data)
    return renamed


def _rename_groups(weights):
    moves = []

    def visit(name, item):
        if not isinstance(item, h5py.Group):
            return
        parent, _, leaf = name.rpartition("/")
        group = weights[parent] if parent else weights
        if leaf in _RENAMED and "query_dense" in group:
            moves.append((group, leaf, _RENAMED[leaf]))

    weights.visititems(visit)
    for group, old, new in moves:
        if new in group:
            raise ValueError(
                f"Both `{old}` and `{new}` exist under `{group.name}`: the "
                "file mixes the two layouts and cannot be upgraded."
            )
        group.move(old, new)
    return len(moves)
