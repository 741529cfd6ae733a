"""SNLI 1.0 loaders, NLI label encoding and word-level text helpers.

Two sources of SNLI are supported (see the data README):

- `"infersent"`: InferSent-tokenized, line-aligned `.s1` / `.s2` / `.labels`
  files in `snli/infersent_tok/` (dev 9,842, test 9,824, and a 9,987-pair
  training subset `train_small`). Rows without a gold label were already
  removed.
- `"jsonl"`: the original JSON Lines files in `snli/jsonl/` (dev and test
  complete, train = the first 1,024 lines of the official training file).
  Rows with `gold_label == "-"` are skipped and counted.

`LABELS` / `encode_labels` map the three NLI classes to integer ids; the
word tokenizer and vocabulary are in `keras_attention.data.words`.
"""

import json
import os

import numpy as np

from keras_attention.data import resolver
from keras_attention.data.errors import DataError
from keras_attention.data.errors import DataFileNotFoundError

LABELS = ("entailment", "neutral", "contradiction")
SPLITS = ("train", "dev", "test")
SOURCES = ("infersent", "jsonl")

_INFERSENT_PREFIX = {
    "train": "snli/infersent_tok/train_small",
    "dev": "snli/infersent_tok/dev",
    "test": "snli/infersent_tok/test",
}
_JSONL_FILE = {
    "train": "snli/jsonl/snli_1.0_train_first1024.jsonl.gz",
    "dev": "snli/jsonl/snli_1.0_dev.jsonl.gz",
    "test": "snli/jsonl/snli_1.0_test.jsonl.gz",
}
_NO_GOLD_LABEL = "-"
# Training sets by name (`load_snli_training`): the source and the file.
TRAINING_SETS = {
    "subset": ("infersent", None),
    "first1024": ("jsonl", "snli/jsonl/snli_1.0_train_first1024.jsonl.gz"),
    "first100000": (
        "jsonl",
        "snli/jsonl/snli_1.0_train_first100000.jsonl.gz",
    ),
}


def encode_labels(labels):
    """Maps NLI label strings to integer ids in the order of `LABELS`.

    Args:
        labels: Iterable of strings from `LABELS` ("entailment" -> 0,
            "neutral" -> 1, "contradiction" -> 2).

    Returns:
        An `np.int32` array of shape `(len(labels),)`.

    Raises:
        ValueError: If any label is not in `LABELS`; the message lists the
            unknown labels and the allowed set.
    """
    index = {label: i for i, label in enumerate(LABELS)}
    labels = list(labels)
    unknown = sorted({repr(x) for x in labels if x not in index})
    if unknown:
        raise ValueError(
            f"Unknown label(s): {', '.join(unknown)}. Expected each label to "
            f"be one of {LABELS}. Received: labels with {len(labels)} "
            "entries"
        )
    return np.array([index[label] for label in labels], dtype=np.int32)


def read_snli_jsonl(path):
    """Reads an SNLI JSON Lines file (optionally gzip-compressed).

    Rows whose `gold_label` is `"-"` (no annotator majority) are skipped and
    counted. Empty lines are ignored.

    Args:
        path: Path of a `.jsonl` or `.jsonl.gz` file.

    Returns:
        A dict with `premise` (list of `sentence1`), `hypothesis` (list of
        `sentence2`), `label` (list of gold label strings) and `skipped`
        (number of rows without a gold label).

    Raises:
        ValueError: If a line is not a JSON object with string fields
            `sentence1`, `sentence2` and `gold_label`, or if a gold label
            is unknown; the message names the file and the 1-based line
            number. Also for truncated or corrupt gzip files.
    """
    return _labelled_pairs(_jsonl_rows(path), path)


def _jsonl_rows(path):
    """`(line number, premise, hypothesis, gold label)` of each JSON row."""
    for number, line in enumerate(resolver.read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(
                f"Malformed JSON in '{path}', line {number}: {error}."
            ) from None
        if not isinstance(row, dict):
            raise DataError(
                f"Malformed row in '{path}', line {number}: expected a JSON "
                f"object. Received: {line[:80]!r}"
            )
        for key in ("sentence1", "sentence2", "gold_label"):
            if not isinstance(row.get(key), str):
                raise DataError(
                    f"Malformed row in '{path}', line {number}: expected a "
                    f"string field '{key}'. Received: {key}="
                    f"{row.get(key)!r}"
                )
        yield number, row["sentence1"], row["sentence2"], row["gold_label"]


def _labelled_pairs(rows, labels_path):
    """The readers' common ending: `rows` of `(line number, premise,
    hypothesis, gold label)` -> the dict of lists, rows labelled `"-"`
    skipped and counted, an unknown label refused with its file and line.
    """
    premise, hypothesis, label = [], [], []
    skipped = 0
    for number, p, h, gold in rows:
        if gold == _NO_GOLD_LABEL:
            skipped += 1
            continue
        if gold not in LABELS:
            raise DataError(
                f"Unknown gold label in '{labels_path}', line {number}. "
                f"Expected one of {LABELS + (_NO_GOLD_LABEL,)}. Received: "
                f"gold_label={gold!r}"
            )
        premise.append(p)
        hypothesis.append(h)
        label.append(gold)
    return {
        "premise": premise,
        "hypothesis": hypothesis,
        "label": label,
        "skipped": skipped,
    }


def read_snli_tokenized(premise_path, hypothesis_path, labels_path):
    """Reads line-aligned InferSent-style SNLI files.

    Trailing whitespace (the InferSent files end every sentence with a
    space) is removed. Rows labelled `"-"` are skipped and counted.

    Args:
        premise_path: Path of the `.s1` file (one premise per line).
        hypothesis_path: Path of the `.s2` file (one hypothesis per line).
        labels_path: Path of the `.labels` file (one label per line).

    Returns:
        A dict with `premise`, `hypothesis`, `label` (lists of strings) and
        `skipped` (number of rows labelled `"-"`).

    Raises:
        ValueError: If the three files have different numbers of lines
            (the message names the files and counts), or if a label is
            unknown (the message names the file and 1-based line number).
    """
    premises = resolver.read_lines(premise_path)
    hypotheses = resolver.read_lines(hypothesis_path)
    labels = resolver.read_lines(labels_path)
    counts = (len(premises), len(hypotheses), len(labels))
    if len(set(counts)) != 1:
        raise DataError(
            "SNLI files are not line-aligned: "
            f"'{premise_path}' has {counts[0]} lines, "
            f"'{hypothesis_path}' has {counts[1]} lines, "
            f"'{labels_path}' has {counts[2]} lines."
        )
    rows = (
        (number, p.rstrip(), h.rstrip(), gold.strip())
        for number, (p, h, gold) in enumerate(
            zip(premises, hypotheses, labels), start=1
        )
    )
    return _labelled_pairs(rows, labels_path)


def load_snli(split, data_dir=None, source="infersent"):
    """Loads one split of SNLI 1.0.

    Args:
        split: One of `"train"`, `"dev"`, `"test"`. With the `"infersent"`
            source, `"train"` is the 9,987-pair `train_small` subset; with
            `"jsonl"` it is the first 1,024 lines of the official training
            file (1,022 pairs). The full training set is not staged.
        data_dir: Data directory (see `keras_attention.data.get_file`).
        source: `"infersent"` (tokenized text) or `"jsonl"` (original
            untokenized text).

    Returns:
        A dict with `premise`, `hypothesis`, `label` (lists of strings,
        labels from `LABELS`) and `skipped` (number of rows without a gold
        label that were dropped: 158 for jsonl dev, 176 for test, 2 for
        train; 0 for infersent files, which were filtered beforehand).

    Raises:
        ValueError: For an unknown `split` or `source`, malformed files or
            checksum mismatches.
        FileNotFoundError: If a file is missing from the data directory.
    """
    split = resolver.check_split(split, SPLITS)
    if source == "infersent":
        prefix = _INFERSENT_PREFIX[split]
        paths = [
            resolver.get_file(f"{prefix}.{suffix}", data_dir=data_dir)
            for suffix in ("s1", "s2", "labels")
        ]
        return read_snli_tokenized(*paths)
    if source == "jsonl":
        return read_snli_jsonl(
            resolver.get_file(_JSONL_FILE[split], data_dir=data_dir)
        )
    raise ValueError(
        f"Unknown source. Expected one of {SOURCES}. "
        f"Received: source={source!r}"
    )


def load_snli_training(training="subset", data_dir=None):
    """Loads SNLI training pairs, with the dev and test source that suits
    them.

    Args:
        training: a name of `TRAINING_SETS`: `"subset"` (the 9,987-pair
            InferSent `train_small`), `"first1024"` or `"first100000"` (the
            first 1,024 or 100,000 lines of the official training file,
            1,022 and 99,890 pairs with a gold label); or the path of a
            file in the official JSON Lines format (plain or `.gz`), such
            as the full `snli_1.0_train.jsonl` (550,152 pairs), read
            without checksum verification.
        data_dir: Data directory (see `keras_attention.data.get_file`).

    Returns:
        A tuple `(rows, source)`: the dict of `read_snli_jsonl` and the
        source whose dev and test sets go with it (`"infersent"` for the
        InferSent subset, `"jsonl"` otherwise: the same sentences,
        untokenized).

    Raises:
        DataFileNotFoundError: If `training` is neither a name nor a file.
        DataError: If the file is malformed or holds no pair with a gold
            label.
    """
    source = snli_evaluation_source(training)
    if training in TRAINING_SETS:
        relative_path = TRAINING_SETS[training][1]
        if relative_path is None:
            return load_snli("train", data_dir=data_dir, source=source), source
        path = resolver.get_file(relative_path, data_dir=data_dir)
        return read_snli_jsonl(path), source
    if isinstance(training, (str, os.PathLike)) and os.path.isfile(training):
        path = os.fspath(training)
        rows = read_snli_jsonl(path)
        if not rows["label"]:
            raise DataError(
                f"The SNLI file '{path}' holds no pair with a gold label "
                f"({rows['skipped']} without one): expected lines of the "
                "official JSON Lines format, with sentence1, sentence2 and "
                f"a gold_label in {LABELS}."
            )
        return rows, source
    raise DataFileNotFoundError(
        f"No SNLI training file '{training}': expected one of "
        f"{sorted(TRAINING_SETS)} or the path of an existing SNLI JSON Lines "
        f"file. Received: training={training!r}"
    )


def snli_evaluation_source(training="subset"):
    """The source of the SNLI dev and test sets that go with `training`.

    `"infersent"` (the tokenized copy) for the InferSent subset, whose
    sentences are tokenized; `"jsonl"` (the official untokenized text) for
    the other names of `TRAINING_SETS` and for a file path. Nothing is
    read, so an evaluation finds its source from a run's `train_data`
    alone, even where the training file is gone.

    Args:
        training: what `load_snli_training` takes. Defaults to
            `"subset"`.

    Returns:
        `"infersent"` or `"jsonl"`, a `source` of `load_snli`.

    Example:

    >>> snli_evaluation_source("subset"), snli_evaluation_source("first100000")
    ('infersent', 'jsonl')
    """
    if isinstance(training, str) and training in TRAINING_SETS:
        return TRAINING_SETS[training][0]
    return "jsonl"
