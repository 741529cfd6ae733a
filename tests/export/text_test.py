"""The in-graph word tokenizer equals `keras_attention.data.tokenize`.

Pure TensorFlow graph code, independent of the Keras backend: it runs on
the tensorflow pass of the suite only.
"""

import os
import random
import re
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import data
from keras_attention.data import resolver
from keras_attention.export import text

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="backend-independent TensorFlow code; runs on the tensorflow pass",
)

HAND_PICKED = [
    "A man isn't riding.",
    "Don't can't won't ain't n't",
    "It's o'clock; rock'n'roll, we'd've",
    "Hello... world -- --- .... . . .",
    "o'don't isn'ts 're 's 'x 'S IT'S THEY'RE",
    "don't's don't'x can't've n't't",
    "Café ÜBER naïve 東京 İstanbul",
    "",
    "   \t\n",
    "a_b 3.5 $10 e-mail #tag @user (x) [y] {z}",
    "’s ‘quoted’ “double” «guillemets»",
    "x\x00Y",
    "tab\tnew\nline\u00a0nbsp\u2003em\u3000ideographic",
    "e\u0301 combining acute, \U0001f600 emoji",
]
FUZZ_ALPHABET = list("ants'dmrevl.-_ x9é\tA\u00a0\u0301!")


def graph_tokens(sentences):
    tokens = text.tokenize_words(text.clean_utf8(tf.constant(sentences)))
    return [[t.decode("utf-8") for t in row] for row in tokens.to_list()]


def assert_same_tokens(sentences):
    got = graph_tokens(sentences)
    wrong = [
        (s, g, data.tokenize(s))
        for s, g in zip(sentences, got)
        if g != data.tokenize(s)
    ]
    assert not wrong, f"{len(wrong)} differ, first: {wrong[:3]}"


def staged_sentences():
    # Without staged data the loaders would try to download (no network
    # here, and Keras reports a failed download as a bare Exception).
    if not os.environ.get(resolver.ENV_VAR):
        pytest.skip(f"{resolver.ENV_VAR} is not set (no staged data)")
    try:
        sentences = []
        for split in ("train", "trial", "test"):
            rows = data.load_sick(split)
            sentences += rows["sentence_a"] + rows["sentence_b"]
        for split in ("dev", "test"):
            rows = data.load_snli(split, source="jsonl")
            sentences += rows["premise"] + rows["hypothesis"]
    except (FileNotFoundError, ValueError, OSError) as error:
        pytest.skip(
            f"staged data not found (set KERAS_ATTENTION_DATA): {error}"
        )
    return sentences


def test_hand_picked_contractions_punctuation_and_unicode():
    assert_same_tokens(HAND_PICKED)


def test_every_sick_and_snli_sentence():
    sentences = staged_sentences()
    assert len(sentences) > 40_000
    assert_same_tokens(sentences)


def test_random_strings_of_the_tricky_characters():
    rng = random.Random(0)
    sentences = [
        "".join(rng.choice(FUZZ_ALPHABET) for _ in range(rng.randint(0, 14)))
        for _ in range(20_000)
    ]
    assert_same_tokens(sentences)


def test_word_and_space_classes_match_python_on_every_code_point():
    # Python 3.11 has Unicode 14 tables; TensorFlow's RE2 newer ones, so
    # code points unassigned in Python's tables may differ.
    points = [
        c
        for c in range(0x110000)
        if unicodedata.category(chr(c)) not in ("Cs", "Cn")
    ]
    chars = [chr(c) for c in points]
    encoded = tf.constant([c.encode("utf-8") for c in chars])
    word = tf.strings.regex_full_match(encoded, text._WORD).numpy()
    space = tf.strings.regex_full_match(encoded, text._SPACE).numpy()
    np.testing.assert_array_equal(
        word, [re.fullmatch(r"\w", c) is not None for c in chars]
    )
    np.testing.assert_array_equal(space, [c.isspace() for c in chars])
    lowered = text.lowercase(encoded).numpy()
    differ = [
        hex(p)
        for p, c, low in zip(points, chars, lowered)
        if c.lower().encode("utf-8") != low
    ]
    # The letters added in Unicode 14, listed in the module docstring.
    known = {0x2C2F, 0xA7C0, 0xA7D0, 0xA7D6, 0xA7D8}
    known |= set(range(0x10570, 0x10596))
    assert {int(p, 16) for p in differ} <= known, differ


def test_final_sigma_is_the_documented_difference():
    assert graph_tokens(["ΟΔΟΣ"]) == [["οδοσ"]]
    assert data.tokenize("ΟΔΟΣ") == ["οδος"]


def test_invalid_utf8_becomes_replacement_characters():
    rows = [b"ok \xff\xfe then \xc3", b"fine"]
    tokens = text.tokenize_words(text.clean_utf8(tf.constant(rows)))
    got = [[t.decode("utf-8") for t in row] for row in tokens.to_list()]
    assert got == [["ok", "\ufffd", "\ufffd", "then", "\ufffd"], ["fine"]]
    assert got[0] == data.tokenize(rows[0].decode("utf-8", errors="replace"))


def test_marker_characters_in_the_vocabulary_are_refused():
    with pytest.raises(ValueError, match="Received: vocabulary with"):
        text.vocabulary_table(["<pad>", "<unk>", "\x01"])


def test_vocabulary_table_maps_unknown_words_to_one():
    table = text.vocabulary_table(["<pad>", "<unk>", "a", "man"])
    ids = table.lookup(tf.constant(["man", "a", "horse"])).numpy()
    np.testing.assert_array_equal(ids, [3, 2, 1])
