"""Tests for the Multi30k loaders."""

import gzip
import os
import shutil

import pytest

from keras_attention.data import multi30k


@pytest.fixture
def staged_dir():
    path = os.environ.get("KERAS_ATTENTION_DATA")
    if not path:
        pytest.skip("KERAS_ATTENTION_DATA is not set")
    return path


@pytest.mark.parametrize("tokenized", [False, True])
@pytest.mark.parametrize(
    "split, count",
    [("train", 29000), ("val", 1014), ("test2016", 1000), ("test2017", 1000)],
)
def test_multi30k_counts_match_readme(staged_dir, split, count, tokenized):
    english, german = multi30k.load_multi30k(
        split, data_dir=staged_dir, tokenized=tokenized
    )
    assert len(english) == len(german) == count
    assert all(english) and all(german)


def test_multi30k_tokenized_text_is_lowercase(staged_dir):
    english, german = multi30k.load_multi30k(
        "val", data_dir=staged_dir, tokenized=True
    )
    assert english == [line.lower() for line in english]
    assert (
        german[0]
        == "eine gruppe von männern lädt baumwolle auf einen lastwagen"
    )


def test_multi30k_unknown_split_names_received_value():
    with pytest.raises(ValueError) as info:
        multi30k.load_multi30k("test")
    assert str(info.value) == (
        "Unknown split. Expected one of "
        "('train', 'val', 'test2016', 'test2017'). Received: split='test'"
    )


def test_tokenized_multi30k_without_data_dir_raises_clear_error(monkeypatch):
    monkeypatch.delenv("KERAS_ATTENTION_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="no public download URL"):
        multi30k.load_multi30k("val", tokenized=True)


def test_line_count_mismatch_names_both_files_and_counts(tmp_path):
    en = tmp_path / "x.en.gz"
    de = tmp_path / "x.de.gz"
    en.write_bytes(gzip.compress(b"a\nb\nc\n"))
    de.write_bytes(gzip.compress(b"a\nb\n"))
    with pytest.raises(ValueError) as info:
        multi30k.read_parallel(en, de)
    message = str(info.value)
    assert f"'{en}' has 3 lines" in message
    assert f"'{de}' has 2 lines" in message


def test_truncated_staged_gzip_raises_value_error_naming_file(
    staged_dir, tmp_path
):
    source = os.path.join(staged_dir, "multi30k", "raw", "val.en.gz")
    en = tmp_path / "val.en.gz"
    shutil.copyfile(source, en)
    en.write_bytes(en.read_bytes()[:5000])
    de = os.path.join(staged_dir, "multi30k", "raw", "val.de.gz")
    with pytest.raises(ValueError, match="truncated or corrupt") as info:
        multi30k.read_parallel(en, de)
    assert str(en) in str(info.value)


def test_corrupt_gzip_in_data_dir_fails_checksum_first(tmp_path):
    directory = tmp_path / "multi30k" / "raw"
    directory.mkdir(parents=True)
    for name in ("val.en.gz", "val.de.gz"):
        (directory / name).write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(ValueError, match="val.en.gz"):
        multi30k.load_multi30k("val", data_dir=tmp_path)
