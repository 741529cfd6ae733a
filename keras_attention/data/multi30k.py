"""Multi30k task 1 (English-German) loaders.

Each split is a pair of line-aligned, gzip-compressed text files, one
sentence per line: `multi30k/raw/<prefix>.{en,de}.gz` (original text) or
`multi30k/tok/<prefix>.lc.norm.tok.{en,de}.gz` (lowercased, normalized and
Moses-tokenized). The tokenized files have no public URL in this exact form,
so they are only available from a data directory.
"""

import os

from keras_attention.data import resolver
from keras_attention.data.errors import DataError

SPLITS = ("train", "val", "test2016", "test2017")

_PREFIX = {
    "train": "train",
    "val": "val",
    "test2016": "test_2016_flickr",
    "test2017": "test_2017_flickr",
}


def read_parallel(path_en, path_de):
    """Reads two line-aligned text files (gzip if the name ends in `.gz`).

    Args:
        path_en: Path of the source (English) file.
        path_de: Path of the target (German) file.

    Returns:
        A tuple `(english, german)` of equally long lists of strings,
        without line endings.

    Raises:
        ValueError: If the files have different numbers of lines (the
            message names both files and counts), or if a gzip file is
            truncated or corrupt (the message names the file).
    """
    english = resolver.read_lines(path_en)
    german = resolver.read_lines(path_de)
    if len(english) != len(german):
        raise DataError(
            "Parallel files have different numbers of lines: "
            f"'{os.fspath(path_en)}' has {len(english)} lines, "
            f"'{os.fspath(path_de)}' has {len(german)} lines."
        )
    return english, german


def load_multi30k(split, data_dir=None, tokenized=False):
    """Loads one split of Multi30k English-German.

    Args:
        split: `"train"` (29,000 pairs), `"val"` (1,014), `"test2016"`
            (1,000, the standard test set) or `"test2017"` (1,000).
        data_dir: Data directory (see `keras_attention.data.get_file`).
        tokenized: If `True`, read the lowercased, tokenized files from
            `multi30k/tok/` instead of the raw text.

    Returns:
        A tuple `(english, german)` of equally long lists of sentences.

    Raises:
        ValueError: For an unknown `split`, misaligned or corrupt files, or
            a checksum mismatch.
        FileNotFoundError: If a file is missing from the data directory, or
            if `tokenized=True` without a data directory.
    """
    split = resolver.check_split(split, SPLITS)
    prefix = _PREFIX[split]
    if tokenized:
        names = [
            f"multi30k/tok/{prefix}.lc.norm.tok.{x}.gz" for x in ("en", "de")
        ]
    else:
        names = [f"multi30k/raw/{prefix}.{x}.gz" for x in ("en", "de")]
    paths = [resolver.get_file(name, data_dir=data_dir) for name in names]
    return read_parallel(*paths)
