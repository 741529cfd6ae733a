"""Word vectors in the GloVe text format, and embedding matrices from them.

Reads the standard GloVe text format (`word v1 v2 ... vD`, single spaces,
optionally gzip-compressed), whatever the width `D`. Two files are staged
(`VECTORS`, by name):

- `"glove50"`: `glove/glove.6B.50d.subset.txt.gz`, 21,784 words of GloVe
  6B 50d (the 15,000 most frequent words plus every word of the staged
  English data).
- `"spacy300"`: `vectors/spacy_en_core_web_md_3.8.0.300d.txt.gz`, the
  300-d vectors of spaCy's `en_core_web_md` 3.8.0 for the 27,828 words of
  the staged data that have one. They are not GloVe, and the table is
  pruned, so some words share a vector.

Neither has a public URL: set `KERAS_ATTENTION_DATA` or pass `data_dir`.
Any other file in the format (300-d GloVe 840B, say) is read from its path
by `load_vectors`. `embedding_matrix` aligns vectors to a vocabulary; it
is the one function that builds embedding matrices.
"""

import os

import numpy as np

from keras_attention.data import resolver
from keras_attention.data.errors import DataError
from keras_attention.data.errors import DataFileNotFoundError

GLOVE_FILE = "glove/glove.6B.50d.subset.txt.gz"
SPACY_FILE = "vectors/spacy_en_core_web_md_3.8.0.300d.txt.gz"
VECTORS = {"glove50": GLOVE_FILE, "spacy300": SPACY_FILE}
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
            raise DataError(
                f"Malformed GloVe file '{path}', line {number}: expected a "
                f"word followed by numbers. Received: {line[:80]!r}"
            )
        if dimension is None:
            dimension = len(parts) - 1
            if number == 1 and dimension == 1 and _is_count(parts):
                raise DataError(
                    f"Malformed GloVe file '{path}', line 1: expected a "
                    "word followed by numbers. Received: a word2vec header "
                    f"{line[:80]!r} (GloVe files have none: remove the "
                    "first line)"
                )
        elif len(parts) - 1 != dimension:
            raise DataError(
                f"Inconsistent vector length in GloVe file '{path}', line "
                f"{number} (word {parts[0]!r}): expected {dimension} values "
                f"(the length of line 1). Received: {len(parts) - 1} values"
            )
        words.append(parts[0])
        rows.append(parts[1:])
    if dimension is None:
        raise DataError(f"The GloVe file '{path}' is empty.")
    try:
        vectors = np.array(rows, dtype=np.float32)
    except ValueError:
        for number, values in enumerate(rows, start=1):
            try:
                np.array(values, dtype=np.float32)
            except ValueError as error:
                raise DataError(
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
    return embedding_matrix(
        vocabulary,
        words,
        vectors,
        seed=seed,
        oov_stddev=oov_stddev if oov == "normal" else 0.0,
        lowercase=True,
    )


def load_vectors(vectors, data_dir=None):
    """Reads a staged vectors file by name, or any GloVe-format file.

    Args:
        vectors: a name of `VECTORS` (`"glove50"`, `"spacy300"`), or the
            path of a GloVe-format text file (plain or `.gz`, any width).
        data_dir: Data directory for the staged files.

    Returns:
        A tuple `(words, vectors)`, as `read_glove_file`.

    Raises:
        DataFileNotFoundError: If `vectors` is neither a staged name nor
            an existing file.
        DataError: If the file is empty or not in the GloVe format.
    """
    if vectors in VECTORS:
        return read_glove_file(
            resolver.get_file(VECTORS[vectors], data_dir=data_dir)
        )
    if isinstance(vectors, (str, os.PathLike)) and os.path.isfile(vectors):
        return read_glove_file(vectors)
    if isinstance(vectors, (str, os.PathLike)) and os.path.exists(vectors):
        raise DataError(
            f"The vectors path '{os.fspath(vectors)}' is not a file: "
            f"expected one of {sorted(VECTORS)} or the path of a "
            f"GloVe-format file. Received: vectors={vectors!r}"
        )
    raise DataFileNotFoundError(
        f"No vectors file '{vectors}': expected one of {sorted(VECTORS)} "
        f"or the path of an existing GloVe-format file. Received: "
        f"vectors={vectors!r}"
    )


def _is_count(parts):
    """Whether a line's two fields are integers (a word2vec header)."""
    return all(part.isdigit() for part in parts)


def embedding_matrix(
    vocabulary,
    words,
    vectors,
    seed=1337,
    oov_stddev=1.0,
    lowercase=False,
    unit_norm=False,
    padding_id=None,
):
    """One row per vocabulary word: its vector, or a random row.

    ```
    matrix[i] = vectors[first row of vocabulary[i] in words]   # found
              ~ normal(0, oov_stddev)                          # otherwise
    matrix[i] /= |matrix[i]|          # with unit_norm
    matrix[padding_id] = 0            # with padding_id
    ```

    Args:
        vocabulary: list of words, index = id.
        words: list of `V` words of the vectors file (the first row of a
            repeated word is used).
        vectors: `(V, D)` array.
        seed: int. Seed of the NumPy generator that draws the rows of
            words without a vector (deterministic for a vocabulary).
            Defaults to `1337`.
        oov_stddev: float. Standard deviation of those rows; `0` gives
            zeros. Defaults to `1.0`.
        lowercase: bool. Look a word up lowercased when it is not found as
            is (GloVe 6B is uncased). Defaults to `False`.
        unit_norm: bool. Scale every row to unit norm (the NLI models'
            frozen vectors). Defaults to `False`.
        padding_id: optional int. A row set to zero. Defaults to `None`.

    Returns:
        A tuple `(matrix, found)`: a float32 matrix `(len(vocabulary), D)`
        and the number of vocabulary words found in `words`.
    """
    vocabulary = list(vocabulary)
    shape = (len(vocabulary), np.shape(vectors)[1])
    rng = np.random.default_rng(seed)
    matrix = rng.normal(0.0, oov_stddev, size=shape)
    found = 0
    for i, row in enumerate(_vector_rows(vocabulary, words, lowercase)):
        if row is not None:
            matrix[i] = vectors[row]
            found += 1
    if unit_norm:
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.maximum(norms, 1e-6)
    if padding_id is not None:
        matrix[padding_id] = 0.0
    return matrix.astype(np.float32), found


def distinct_vectors(vocabulary, words, vectors, lowercase=False):
    """How many different vectors the vocabulary's words found in `words`
    have.

    A pruned table maps many words to one vector: the staged spaCy vectors
    give the 17,063 words of the 100,000-pair SNLI vocabulary that they
    cover 3,028 different rows (`dog` and `cat` one, `sitting` and
    `standing` one), where GloVe gives each word its own. Frozen, such
    vectors cannot tell those words apart.

    Args:
        vocabulary, words, vectors, lowercase: as for `embedding_matrix`.

    Returns:
        int: the number of distinct rows (by value) among the found words.
    """
    rows = _vector_rows(vocabulary, words, lowercase)
    found = sorted({row for row in rows if row is not None})
    if not found:
        return 0
    return len(np.unique(np.asarray(vectors)[found], axis=0))


def _vector_rows(vocabulary, words, lowercase):
    """Each vocabulary word's first row in `words`, or `None`."""
    index = {}
    for i, word in enumerate(words):
        index.setdefault(word, i)
    rows = []
    for word in vocabulary:
        row = index.get(word)
        if row is None and lowercase and isinstance(word, str):
            row = index.get(word.lower())
        rows.append(row)
    return rows
