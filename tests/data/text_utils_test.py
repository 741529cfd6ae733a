"""Tests for tokenize, build_vocabulary and label encoding."""

import numpy as np
import pytest

from keras_attention import data


def test_labels_order_is_entailment_neutral_contradiction():
    assert data.LABELS == ("entailment", "neutral", "contradiction")


def test_encode_labels_returns_int32_ids():
    ids = data.encode_labels(["contradiction", "entailment", "neutral"])
    assert ids.dtype == np.int32
    assert ids.tolist() == [2, 0, 1]


def test_encode_labels_empty_input_gives_empty_array():
    ids = data.encode_labels([])
    assert ids.shape == (0,)
    assert ids.dtype == np.int32


def test_encode_labels_names_bad_labels_and_allowed_set():
    with pytest.raises(ValueError) as info:
        data.encode_labels(["neutral", "-", "NEUTRAL", "-"])
    message = str(info.value)
    assert "'-'" in message
    assert "'NEUTRAL'" in message
    assert "('entailment', 'neutral', 'contradiction')" in message


def test_tokenize_lowercases_and_splits_punctuation():
    assert data.tokenize("A man, riding a Horse.") == [
        "a",
        "man",
        ",",
        "riding",
        "a",
        "horse",
        ".",
    ]


def test_tokenize_splits_contractions_like_the_treebank():
    assert data.tokenize("He isn't sure it's 5 o'clock") == [
        "he",
        "is",
        "n't",
        "sure",
        "it",
        "'s",
        "5",
        "o'clock",
    ]


def test_tokenize_keeps_pretokenized_text():
    text = "Two women are embracing while holding to go packages . "
    assert data.tokenize(text) == text.lower().split()


def test_tokenize_rejects_non_strings():
    with pytest.raises(TypeError, match="Received: text=3"):
        data.tokenize(3)


def test_build_vocabulary_orders_by_count_then_first_seen():
    vocabulary = data.build_vocabulary(["b a b", "c a b", "d"])
    assert vocabulary == ["<pad>", "<unk>", "b", "a", "c", "d"]


def test_build_vocabulary_min_count_and_max_size():
    sentences = [["x", "y", "x"], ["y", "z", "<unk>"]]
    assert data.build_vocabulary(sentences, min_count=2) == [
        "<pad>",
        "<unk>",
        "x",
        "y",
    ]
    assert data.build_vocabulary(sentences, max_size=3) == [
        "<pad>",
        "<unk>",
        "x",
    ]


def test_build_vocabulary_without_reserved_tokens():
    assert data.build_vocabulary(["a b a"], reserved=()) == ["a", "b"]


def test_build_vocabulary_rejects_bad_min_count():
    with pytest.raises(ValueError, match="Received: min_count=0"):
        data.build_vocabulary(["a"], min_count=0)


def test_public_names_are_exported():
    for name in data.__all__:
        assert hasattr(data, name), name
