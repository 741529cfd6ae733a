"""GloVe word vector loader.

Reads the standard GloVe text format (`word v1 v2 ... vD`, single spaces,
optionally gzip-compressed). The staged file
`glove/glove.6B.50d.subset.txt.gz` holds 21,784 words of GloVe 6B 50d (the
15,000 most frequent words plus every word of the staged English data). It
has no public URL: set `KERAS_ATTENTION_DATA` or pass `data_dir`.
"""

import os

import numpy as np

from keras_attention.data import resolver

GLOVE_FILE = "glove/glove.6B.50d.subset.txt.gz"
OOV_MODES = ("normal", "zeros")


def read_glove_file(path):
    """Parses a GloVe text file.

    Args:
        path: Path of the file (gzip if the name ends in `.gz`).

    Returns:
        A tuple `(words, vectors)`: a list of `V` words and a `np.float32`
        matrix of shape `(V, D)`. If a word occurs more than once, all rows
        are returned (lookups in `load_glove` use the first).

    Raises:
        ValueError: If the file is empty, if a line's vector length differs
            from that of the first line, or if a value is not a number. The
            message names the file and the 1-based line number. Also for
            truncated or corrupt gzip files.
    """
    path = os.fspath(path)
    words = []
    rows = []
    dimension = None
    for number, line in enumerate(resolver.read_lines(path), start=1):
        parts = line.rstrip().split(" ")
        if len(parts) < 2:
            raise ValueError(
                f"Malformed GloVe file '{path}', line {number}: expected a "
                f"word followed by numbers. Received: {line[:80]!r}"
            )
        if dimension is None:
            dimension = len(parts) - 1
        elif len(parts) - 1 != dimension:
            raise ValueError(
                f"Inconsistent vector length in GloVe file '{path}', line "
                f"{number} (word {parts[0]!r}): expected {dimension} values "
                f"(the length of line 1). Received: {len(parts) - 1} values"
            )
        words.append(parts[0])
        rows.append(parts[1:])
    if dimension is None:
        raise ValueError(f"The GloVe file '{path}' is empty.")
    try:
        vectors = np.array(rows, dtype=np.float32)
    except ValueError:
        for number, values in enumerate(rows, start=1):
            try:
                np.array(values, dtype=np.float32)
            except ValueError as error:
                raise ValueError(
                    f"Malformed GloVe file '{path}', line {number}: {error}"
                ) from None
        raise
    return words, vectors


def load_glove(
    vocabulary=None,
    data_dir=None,
    path=None,
    oov="normal",
    oov_stddev=0.1,
    seed=1337,
):
    """Loads GloVe vectors, optionally aligned to a vocabulary.

    Args:
        vocabulary: Optional list of words. If given, an embedding matrix
            with one row per vocabulary entry is returned instead of the
            whole file. Each word is looked up as is, then lowercased
            (GloVe 6B is uncased).
        data_dir: Data directory for the staged subset (see
            `keras_attention.data.get_file`). Ignored if `path` is given.
        path: Explicit path of a GloVe text file (plain or `.gz`), read
            without checksum verification.
        oov: Initialization of rows for words not in GloVe: `"normal"`
            draws from a normal distribution with mean 0 and standard
            deviation `oov_stddev` using a NumPy generator seeded with
            `seed` (deterministic for a given vocabulary); `"zeros"` leaves
            them at zero.
        oov_stddev: Standard deviation for `oov="normal"`.
        seed: Seed for `oov="normal"`.

    Returns:
        Without `vocabulary`: a tuple `(words, vectors)`, a list of `V`
        words and a `np.float32` matrix of shape `(V, D)`.
        With `vocabulary`: a tuple `(matrix, found)`, a `np.float32` matrix
        of shape `(len(vocabulary), D)` whose row `i` is the vector of
        `vocabulary[i]`, and the number of vocabulary entries found in
        GloVe.

    Raises:
        ValueError: For a malformed file (see `read_glove_file`), an
            unknown `oov` mode or a checksum mismatch.
        FileNotFoundError: If no file is found; the staged subset has no
            download URL, so without `path` a data directory is needed.
    """
    if oov not in OOV_MODES:
        raise ValueError(
            f"Unknown oov mode. Expected one of {OOV_MODES}. "
            f"Received: oov={oov!r}"
        )
    if path is None:
        path = resolver.get_file(GLOVE_FILE, data_dir=data_dir)
    words, vectors = read_glove_file(path)
    if vocabulary is None:
        return words, vectors
    index = {}
    for i, word in enumerate(words):
        index.setdefault(word, i)
    vocabulary = list(vocabulary)
    shape = (len(vocabulary), vectors.shape[1])
    if oov == "normal":
        rng = np.random.default_rng(seed)
        matrix = rng.normal(0.0, oov_stddev, size=shape).astype(np.float32)
    else:
        matrix = np.zeros(shape, dtype=np.float32)
    found = 0
    for i, word in enumerate(vocabulary):
        row = index.get(word)
        if row is None and isinstance(word, str):
            row = index.get(word.lower())
        if row is not None:
            matrix[i] = vectors[row]
            found += 1
    return matrix, found
