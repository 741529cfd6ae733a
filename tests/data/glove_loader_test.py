"""Tests for the GloVe loader."""

import gzip
import os

import numpy as np
import pytest

from keras_attention.data import glove

SMALL = "the 0.5 -1.0 2.0\ncat 1.0 1.0 1.0\ndog -0.25 0 3\n"


@pytest.fixture
def staged_dir():
    path = os.environ.get("KERAS_ATTENTION_DATA")
    if not path:
        pytest.skip("KERAS_ATTENTION_DATA is not set")
    return path


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "small.txt.gz"
    path.write_bytes(gzip.compress(SMALL.encode()))
    return path


def test_staged_glove_subset_shape_and_first_row(staged_dir):
    words, vectors = glove.load_glove(data_dir=staged_dir)
    assert len(words) == 21784
    assert vectors.shape == (21784, 50)
    assert vectors.dtype == np.float32
    assert words[0] == "the"
    np.testing.assert_array_equal(
        vectors[0, :5],
        np.array([0.418, 0.24968, -0.41242, 0.1217, 0.34527], np.float32),
    )


def test_explicit_path_is_read_without_data_dir(small_file, monkeypatch):
    monkeypatch.delenv("KERAS_ATTENTION_DATA", raising=False)
    words, vectors = glove.load_glove(path=small_file)
    assert words == ["the", "cat", "dog"]
    np.testing.assert_array_equal(vectors[2], [-0.25, 0.0, 3.0])


def test_vocabulary_rows_are_aligned_and_found_is_counted(small_file):
    matrix, found = glove.load_glove(
        ["<pad>", "Dog", "cat", "zebra"], path=small_file, oov="zeros"
    )
    assert found == 2
    assert matrix.dtype == np.float32
    np.testing.assert_array_equal(
        matrix,
        [[0, 0, 0], [-0.25, 0, 3], [1, 1, 1], [0, 0, 0]],
    )


def test_unknown_words_get_seeded_small_normal_vectors(small_file):
    first, _ = glove.load_glove(["x", "cat", "y"], path=small_file, seed=3)
    second, _ = glove.load_glove(["x", "cat", "y"], path=small_file, seed=3)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first[1], [1, 1, 1])
    assert np.all(first[[0, 2]] != 0)
    assert np.abs(first[[0, 2]]).max() < 1.0


def test_inconsistent_vector_length_names_file_line_and_lengths(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("the 1 2 3\ncat 1 2 3\ndog 1 2\n")
    with pytest.raises(ValueError) as info:
        glove.read_glove_file(path)
    message = str(info.value)
    assert str(path) in message
    assert "line 3" in message
    assert "expected 3 values" in message
    assert "Received: 2 values" in message


def test_non_numeric_value_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("the 1 2 3\ncat 1 two 3\n")
    with pytest.raises(ValueError, match="bad.txt', line 2"):
        glove.read_glove_file(path)


def test_truncated_gzip_raises_value_error_naming_file(tmp_path):
    content = gzip.compress(("word " + "0.123 " * 50 + "\n").encode() * 200)
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(content[: len(content) - 20])
    with pytest.raises(ValueError, match="truncated or corrupt") as info:
        glove.load_glove(path=path)
    assert str(path) in str(info.value)


def test_unknown_oov_mode_names_received_value(small_file):
    with pytest.raises(ValueError, match="Received: oov='uniform'"):
        glove.load_glove(["a"], path=small_file, oov="uniform")


def test_glove_without_data_dir_raises_clear_error(monkeypatch):
    monkeypatch.delenv("KERAS_ATTENTION_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="KERAS_ATTENTION_DATA"):
        glove.load_glove()
