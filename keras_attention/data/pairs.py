"""Sentence-pair tasks: splits -> tokens -> vocabulary, embeddings and ids.

The NLI and relatedness applications share this route:

```python
splits = load_nli_splits("snli", training="first100000")   # or
splits = load_relatedness_splits()
pairs = prepare_pairs(splits, NLI_INPUTS, vectors="spacy300")
x, y = pairs.arrays["train"]     # {"premise": (N, T), "hypothesis": ...}
```

A split is a tuple `(first_sentences, second_sentences, targets)`: strings
and, for NLI, label ids (`encode_labels`), for relatedness float32 scores.
The vocabulary holds the training words and the dev and test words that
have a pretrained vector (others map to `<unk>`); every split is padded to
one length, so that a step compiles once per bucket width.
"""

import dataclasses

import numpy as np

from keras_attention.data.errors import DataError
from keras_attention.data.glove import distinct_vectors
from keras_attention.data.glove import embedding_matrix
from keras_attention.data.glove import load_vectors
from keras_attention.data.sick import load_sick
from keras_attention.data.snli import encode_labels
from keras_attention.data.snli import load_snli
from keras_attention.data.snli import load_snli_training
from keras_attention.data.words import PAD_ID
from keras_attention.data.words import add_pretrained_words
from keras_attention.data.words import build_vocabulary
from keras_attention.data.words import tokenize
from keras_attention.data.words import vocabulary_index
from keras_attention.data.words import word_ids
from keras_attention.utils.validation import check_choice

NLI_INPUTS = ("premise", "hypothesis")
RELATEDNESS_INPUTS = ("sentence_a", "sentence_b")
NLI_DATASETS = ("snli", "sick")
EXTRA_TRAINING = ("none", "snli")
SPLITS = ("train", "dev", "test")


def load_nli_splits(
    dataset="snli", training="subset", extra_training="none", data_dir=None
):
    """NLI pairs of SNLI or SICK, labels as ids.

    Args:
        dataset: `"snli"` or `"sick"` (its entailment labels).
        training: SNLI's training pairs: a name or a file path (see
            `load_snli_training`). Dev and test come from the source that
            goes with them. Defaults to `"subset"`.
        extra_training: `"snli"` appends those SNLI training pairs to
            SICK's (`dataset="sick"`; dev and test stay SICK's). Defaults
            to `"none"`.
        data_dir: Data directory (see `keras_attention.data.get_file`).

    Returns:
        `{"train" | "dev" | "test": (premises, hypotheses, label_ids)}`.
    """
    check_choice("dataset", dataset, NLI_DATASETS)
    check_choice("extra_training", extra_training, EXTRA_TRAINING)
    splits = {}
    if dataset == "sick":
        for split in SPLITS:
            rows = load_sick(split, data_dir=data_dir)
            splits[split] = (
                rows["sentence_a"],
                rows["sentence_b"],
                rows["entailment"],
            )
    else:
        rows, source = load_snli_training(training, data_dir=data_dir)
        splits["train"] = _snli_columns(rows)
        for split in ("dev", "test"):
            rows = load_snli(split, data_dir=data_dir, source=source)
            splits[split] = _snli_columns(rows)
    if extra_training == "snli":
        rows, _ = load_snli_training(training, data_dir=data_dir)
        splits["train"] = tuple(
            list(mine) + list(theirs)
            for mine, theirs in zip(splits["train"], _snli_columns(rows))
        )
    return {
        name: (first, second, encode_labels(labels))
        for name, (first, second, labels) in splits.items()
    }


def load_relatedness_splits(data_dir=None):
    """SICK's relatedness pairs: train, dev (SICK's trial) and test.

    Returns:
        `{"train" | "dev" | "test": (sentences_a, sentences_b, scores)}`,
        scores float32 in `[1, 5]`.
    """
    splits = {}
    for name, split in zip(SPLITS, ("train", "trial", "test")):
        rows = load_sick(split, data_dir=data_dir)
        splits[name] = (
            rows["sentence_a"],
            rows["sentence_b"],
            np.asarray(rows["relatedness"], "float32"),
        )
    return splits


def first_rows(splits, sizes):
    """The first `sizes[name]` pairs of each split (`--smoke` runs)."""
    return {
        name: tuple(column[: sizes[name]] for column in columns)
        for name, columns in splits.items()
    }


@dataclasses.dataclass
class PairData:
    """What `prepare_pairs` returns.

    Attributes:
        arrays: `{split: (inputs, targets)}`, inputs a dict of two int32
            `(N, T)` id arrays named by the task's input names.
        vocabulary: list of words, index = id.
        embeddings: float32 `(len(vocabulary), D)`.
        info: dict of counts for the run's metrics: `vocabulary_size`,
            `embedding_dim`, `vectors_found`, `vectors_distinct` (how many
            different vectors the found words have), `padded_length`,
            `sentences_cut`, `pairs` (per split).
    """

    arrays: dict
    vocabulary: list
    embeddings: np.ndarray
    info: dict


def prepare_pairs(
    splits,
    input_names,
    vectors="glove50",
    max_length=100,
    seed=1337,
    data_dir=None,
    oov_stddev=1.0,
    lowercase=False,
    unit_norm=False,
):
    """Tokenizes, builds the vocabulary and embeddings, and encodes ids.

    Args:
        splits: `{split: (first, second, targets)}` with a `"train"` split.
        input_names: the two model input names (`NLI_INPUTS`,
            `RELATEDNESS_INPUTS`).
        vectors: a staged vectors name or a GloVe-format file path
            (`load_vectors`); the width is read from the file.
        max_length: int. Longer sentences are cut (and counted).
        seed, oov_stddev, lowercase, unit_norm: see `embedding_matrix`.
        data_dir: Data directory.

    Returns:
        A `PairData`.
    """
    counts = {name: len(targets) for name, (_, _, targets) in splits.items()}
    empty = [name for name, count in counts.items() if not count]
    if empty:
        raise DataError(
            f"No pairs to use in the {' and '.join(empty)} split(s): "
            f"expected at least one pair in each. Received: {counts}"
        )
    tokenized = {
        name: ([tokenize(s) for s in first], [tokenize(s) for s in second])
        for name, (first, second, _) in splits.items()
    }
    words, table = load_vectors(vectors, data_dir=data_dir)
    vocabulary = pair_vocabulary(tokenized, set(words))
    matrix, found = embedding_matrix(
        vocabulary,
        words,
        table,
        seed=seed,
        oov_stddev=oov_stddev,
        lowercase=lowercase,
        unit_norm=unit_norm,
        padding_id=PAD_ID,
    )
    index = vocabulary_index(vocabulary)
    longest = max(
        len(sentence)
        for first, second in tokenized.values()
        for sentence in first + second
    )
    length = max(1, min(max_length, longest))
    arrays, cut = {}, 0
    for name, sentences in tokenized.items():
        inputs = {}
        for input_name, column in zip(input_names, sentences):
            inputs[input_name], column_cut = word_ids(column, index, length)
            cut += column_cut
        arrays[name] = (inputs, splits[name][2])
    info = {
        "vocabulary_size": len(vocabulary),
        "embedding_dim": int(matrix.shape[1]),
        "vectors_found": int(found),
        "vectors_distinct": distinct_vectors(
            vocabulary, words, table, lowercase=lowercase
        ),
        "padded_length": length,
        "sentences_cut": int(cut),
        "pairs": {name: len(targets) for name, (_, targets) in arrays.items()},
    }
    return PairData(arrays, vocabulary, matrix, info)


def pair_vocabulary(tokenized, pretrained_words):
    """Padding, unknown, every training word, and the dev and test words
    that have a pretrained vector.

    Dev and test words enter only through their fixed pretrained vectors;
    one without a vector maps to `<unk>`.
    """
    first, second = tokenized["train"]
    vocabulary = build_vocabulary(first + second)
    others = [
        sentence
        for name, (first, second) in tokenized.items()
        if name != "train"
        for sentence in first + second
    ]
    return add_pretrained_words(vocabulary, others, pretrained_words)


def _snli_columns(rows):
    return rows["premise"], rows["hypothesis"], rows["label"]
