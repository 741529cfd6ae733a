"""Words -> padded ids: one route for training, evaluation and export."""

import numpy as np
import pytest

from keras_attention import data
from keras_attention.data import words

VOCABULARY = ["<pad>", "<unk>", "a", "dog"]


def test_word_ids_pads_cuts_and_maps_unknown_words():
    ids, cut = data.word_ids([["a", "dog", "a"], ["cat"], []], VOCABULARY, 2)
    np.testing.assert_array_equal(ids, [[2, 3], [1, 0], [0, 0]])
    assert ids.dtype == np.int32
    assert cut == 1


def test_word_ids_default_width_is_the_longest_sentence_at_least_one():
    ids, cut = data.word_ids(["A dog.", "a"], VOCABULARY)
    np.testing.assert_array_equal(ids, [[2, 3, 1], [2, 0, 0]])
    assert cut == 0
    empty, _ = data.word_ids(["", " "], VOCABULARY)
    np.testing.assert_array_equal(empty, [[0], [0]])


def test_max_length_cuts_before_the_width_is_chosen():
    ids, cut = data.word_ids(["a dog a dog", "dog"], VOCABULARY, max_length=3)
    np.testing.assert_array_equal(ids, [[2, 3, 2], [3, 0, 0]])
    assert cut == 1


def test_word_ids_accepts_an_index_and_keeps_first_ids_of_repeats():
    index = words.vocabulary_index(["<pad>", "<unk>", "a", "a"])
    assert index == {"<pad>": 0, "<unk>": 1, "a": 2}
    ids, _ = data.word_ids([["a"]], index)
    assert ids.tolist() == [[2]]


def test_reserved_ids_are_those_of_the_default_vocabulary():
    vocabulary = data.build_vocabulary(["a b"])
    assert vocabulary[data.PAD_ID] == "<pad>"
    assert vocabulary[data.UNK_ID] == "<unk>"


def test_pretrained_words_are_added_in_order_of_first_occurrence():
    vocabulary = data.add_pretrained_words(
        ["<pad>", "<unk>", "a"], [["c", "a", "b"], ["b", "d"]], {"b", "c"}
    )
    assert vocabulary == ["<pad>", "<unk>", "a", "c", "b"]


def test_bad_widths_are_named():
    with pytest.raises(ValueError, match="length"):
        data.word_ids([["a"]], VOCABULARY, length=0)
    with pytest.raises(ValueError, match="max_length"):
        data.word_ids([["a"]], VOCABULARY, max_length=-1)


def test_docstring_examples_run():
    import doctest

    results = doctest.testmod(words)
    assert results.attempted > 0 and results.failed == 0
