"""Tests for the sentence-pair route: training files, vectors of any width,
embedding matrices, and splits -> vocabulary, embeddings and ids."""

import gzip
import json
import os

import numpy as np
import pytest

from keras_attention import data

OFFICIAL_FIELDS = (
    "annotator_labels",
    "captionID",
    "gold_label",
    "pairID",
    "sentence1",
    "sentence1_binary_parse",
    "sentence1_parse",
    "sentence2",
    "sentence2_binary_parse",
    "sentence2_parse",
)


@pytest.fixture
def staged_dir():
    path = os.environ.get("KERAS_ATTENTION_DATA")
    if not path:
        pytest.skip("KERAS_ATTENTION_DATA is not set")
    return path


def official_row(number, premise, hypothesis, gold):
    """One line of `snli_1.0_train.jsonl`, with its ten fields."""
    return {
        "annotator_labels": [gold if gold != "-" else "neutral"],
        "captionID": f"{number}.jpg#0",
        "gold_label": gold,
        "pairID": f"{number}.jpg#0r1e",
        "sentence1": premise,
        "sentence1_binary_parse": "( x )",
        "sentence1_parse": "(ROOT (S x))",
        "sentence2": hypothesis,
        "sentence2_binary_parse": "( y )",
        "sentence2_parse": "(ROOT (S y))",
    }


@pytest.fixture
def official_file(tmp_path):
    rows = [
        official_row(1, "A man plays a guitar.", "A man plays.", "entailment"),
        official_row(2, "Two dogs run.", "Cats sleep.", "contradiction"),
        official_row(3, "A girl reads.", "She is happy.", "-"),
        official_row(4, "Kids don't swim.", "Kids are dry.", "neutral"),
    ]
    assert all(tuple(sorted(row)) == OFFICIAL_FIELDS for row in rows)
    path = tmp_path / "snli_1.0_train.jsonl.gz"
    lines = "\n".join(json.dumps(row) for row in rows) + "\n"
    path.write_bytes(gzip.compress(lines.encode()))
    return path


def test_a_training_file_in_the_official_format_is_read(official_file):
    rows, source = data.load_snli_training(str(official_file))
    assert source == "jsonl"
    assert rows["premise"] == [
        "A man plays a guitar.",
        "Two dogs run.",
        "Kids don't swim.",
    ]
    assert rows["label"] == ["entailment", "contradiction", "neutral"]
    assert rows["skipped"] == 1


def test_an_unknown_training_set_names_the_argument(tmp_path):
    missing = str(tmp_path / "nowhere.jsonl")
    with pytest.raises(ValueError, match="Received: training="):
        data.load_snli_training(missing)


def test_the_staged_100k_training_file_has_its_pairs(staged_dir):
    rows, source = data.load_snli_training("first100000", staged_dir)
    assert source == "jsonl"
    assert len(rows["label"]) == 99890
    assert rows["skipped"] == 110


def test_vectors_of_any_width_come_from_one_flag(tmp_path):
    path = tmp_path / "v7.txt"
    path.write_text("a 1 2 3 4 5 6 7\nb 0 0 0 0 0 0 1\n")
    words, vectors = data.load_vectors(str(path))
    assert words == ["a", "b"] and vectors.shape == (2, 7)
    with pytest.raises(ValueError, match="Received: vectors='glove51'"):
        data.load_vectors("glove51")


def test_the_staged_300d_vectors_are_300_wide(staged_dir):
    words, vectors = data.load_vectors("spacy300", staged_dir)
    assert vectors.shape == (27828, 300)
    assert len(words) == 27828


def test_embedding_matrix_rows_norms_and_padding():
    words = ["the", "Cat", "the"]
    vectors = np.array([[3.0, 4.0], [0.0, 2.0], [9.0, 9.0]], "float32")
    vocabulary = ["<pad>", "<unk>", "the", "cat", "dog"]
    plain, found = data.embedding_matrix(vocabulary, words, vectors, seed=0)
    assert found == 1  # "cat" is not "Cat"; the first "the" is used
    np.testing.assert_array_equal(plain[2], [3.0, 4.0])
    _, found = data.embedding_matrix(["THE", "dog"], words, vectors)
    assert found == 0
    lowered, found = data.embedding_matrix(
        ["THE", "dog"], words, vectors, lowercase=True
    )
    assert found == 1  # "THE" -> "the"
    np.testing.assert_array_equal(lowered[0], [3.0, 4.0])
    scaled, _ = data.embedding_matrix(
        vocabulary, words, vectors, seed=0, unit_norm=True, padding_id=0
    )
    np.testing.assert_allclose(scaled[2], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(scaled[0], [0.0, 0.0])
    np.testing.assert_allclose(np.linalg.norm(scaled[1:], axis=1), 1.0, 1e-6)
    # Rows without a vector are drawn from the seed: the same twice.
    again, _ = data.embedding_matrix(vocabulary, words, vectors, seed=0)
    np.testing.assert_array_equal(plain, again)


def test_prepare_pairs_encodes_every_split_to_one_length(tmp_path):
    vectors = tmp_path / "v3.txt"
    vectors.write_text("a 1 0 0\nman 0 1 0\nsings 0 0 1\nwalks 1 1 0\n")
    splits = {
        "train": (["A man sings ."], ["A man"], np.array([0])),
        "dev": (["A man walks"], ["a woman walks far away"], np.array([1])),
        "test": (["man"], ["sings"], np.array([2])),
    }
    pairs = data.prepare_pairs(
        splits, data.NLI_INPUTS, vectors=str(vectors), max_length=4
    )
    # Training words, then dev and test words with a vector ("walks");
    # "woman", "far", "away" have none and stay unknown.
    assert pairs.vocabulary == [
        "<pad>",
        "<unk>",
        "a",
        "man",
        "sings",
        ".",
        "walks",
    ]
    assert pairs.info["padded_length"] == 4
    assert pairs.info["sentences_cut"] == 1
    assert pairs.info["vectors_found"] == 4
    assert pairs.info["vectors_distinct"] == 4
    assert pairs.embeddings.shape == (7, 3)
    x, y = pairs.arrays["dev"]
    assert x["hypothesis"].tolist() == [[2, 1, 6, 1]]
    assert x["premise"].shape == (1, 4) and y.tolist() == [1]


def test_distinct_vectors_counts_values_not_words():
    # A pruned table (spaCy's) gives several words one vector.
    words = ["dog", "cat", "Sits", "stands", "no"]
    vectors = np.array(
        [[1.0, 0.0], [1.0, 0.0], [0.0, 2.0], [0.0, 2.0], [3.0, 3.0]],
        "float32",
    )
    vocabulary = ["<pad>", "<unk>", "dog", "cat", "Stands", "yes"]
    assert data.distinct_vectors(vocabulary, words, vectors) == 1
    # "Stands" is found (as "stands") only when looked up lowercased.
    assert (
        data.distinct_vectors(vocabulary, words, vectors, lowercase=True) == 2
    )
    assert data.distinct_vectors(["dog", "no"], words, vectors) == 2
    assert data.distinct_vectors(["<pad>", "yes"], words, vectors) == 0
