"""SICK (SemEval-2014 Task 1) loaders.

The files are tab-separated with one header line,
`pair_ID  sentence_A  sentence_B  relatedness_score  entailment_judgment`.
Relatedness scores are floats in [1, 5]; entailment judgments are
`NEUTRAL`, `ENTAILMENT` or `CONTRADICTION` and are returned lowercase (the
same strings as `keras_attention.data.LABELS`). The test file has CRLF line
endings, which are handled.
"""

import numpy as np

from keras_attention.data import resolver
from keras_attention.data.errors import DataError

SPLITS = ("train", "trial", "test")
SPLIT_ALIASES = {"dev": "trial"}
HEADER = (
    "pair_ID",
    "sentence_A",
    "sentence_B",
    "relatedness_score",
    "entailment_judgment",
)
ENTAILMENT_LABELS = ("neutral", "entailment", "contradiction")

_FILES = {
    "train": "sick/SICK_train.txt",
    "trial": "sick/SICK_trial.txt",
    "test": "sick/SICK_test_annotated.txt",
}


def read_sick_file(path):
    """Reads one SICK tab-separated file.

    Empty lines are ignored.

    Args:
        path: Path of the file (plain text, or gzip if it ends in `.gz`).

    Returns:
        A dict with `pair_id` (`np.int32` array), `sentence_a` and
        `sentence_b` (lists of strings), `relatedness` (`np.float32` array,
        values in [1, 5]) and `entailment` (list of lowercase strings
        `"neutral"`, `"entailment"` or `"contradiction"`).

    Raises:
        ValueError: If the header is not the SICK header, or a line has a
            wrong number of tab-separated fields, a non-integer pair id, a
            score that is not a number in [1, 5] or an unknown entailment
            judgment. The message names the file and the 1-based line
            number.
    """
    lines = resolver.read_lines(path)
    if not lines or tuple(lines[0].split("\t")) != HEADER:
        received = lines[0][:120] if lines else ""
        raise DataError(
            f"Malformed SICK file '{path}', line 1: expected the header "
            f"{'<TAB>'.join(HEADER)!r}. Received: {received!r}"
        )
    pair_id, sentence_a, sentence_b, relatedness, entailment = (
        [],
        [],
        [],
        [],
        [],
    )
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(HEADER):
            raise DataError(
                f"Malformed SICK file '{path}', line {number}: expected "
                f"{len(HEADER)} tab-separated fields. Received: "
                f"{len(fields)} fields in {line[:120]!r}"
            )
        try:
            pid = int(fields[0])
        except ValueError:
            raise DataError(
                f"Malformed SICK file '{path}', line {number}: expected an "
                f"integer pair_ID. Received: {fields[0]!r}"
            ) from None
        try:
            score = float(fields[3])
        except ValueError:
            score = float("nan")
        if not 1.0 <= score <= 5.0:
            raise DataError(
                f"Malformed SICK file '{path}', line {number}: expected a "
                "relatedness_score between 1 and 5. Received: "
                f"{fields[3]!r}"
            )
        judgment = fields[4].strip().lower()
        if judgment not in ENTAILMENT_LABELS:
            raise DataError(
                f"Malformed SICK file '{path}', line {number}: expected an "
                f"entailment_judgment in "
                f"{tuple(x.upper() for x in ENTAILMENT_LABELS)}. "
                f"Received: {fields[4]!r}"
            )
        pair_id.append(pid)
        sentence_a.append(fields[1])
        sentence_b.append(fields[2])
        relatedness.append(score)
        entailment.append(judgment)
    return {
        "pair_id": np.array(pair_id, dtype=np.int32),
        "sentence_a": sentence_a,
        "sentence_b": sentence_b,
        "relatedness": np.array(relatedness, dtype=np.float32),
        "entailment": entailment,
    }


def load_sick(split, data_dir=None):
    """Loads one split of SICK.

    Args:
        split: `"train"` (4,500 pairs), `"trial"` (500 pairs; `"dev"` is
            accepted as an alias) or `"test"` (4,927 pairs).
        data_dir: Data directory (see `keras_attention.data.get_file`).

    Returns:
        The dict described in `read_sick_file`.

    Raises:
        ValueError: For an unknown `split`, a malformed file or a checksum
            mismatch.
        FileNotFoundError: If the file is missing from the data directory.
    """
    split = resolver.check_split(split, SPLITS, SPLIT_ALIASES)
    return read_sick_file(resolver.get_file(_FILES[split], data_dir=data_dir))
