import gzip
import os

import numpy as np
import pytest

from keras_attention import metrics
from keras_attention.data import load_multi30k

HYPOTHESIS = "Ein Mann fährt mit dem Fahrrad."
REFERENCE = "Ein Mann fährt mit einem Fahrrad."


def test_tokenized_bleu_matches_hand_count():
    # Tokens: ein mann fährt mit dem|einem fahrrad . (7 on both sides).
    # Matching n-grams: 6/7, 4/6, 2/5, 1/4; equal lengths, so no brevity
    # penalty: BLEU = 100 * (6/7 * 4/6 * 2/5 * 1/4) ** (1/4).
    expected = 100 * (6 / 7 * 4 / 6 * 2 / 5 * 1 / 4) ** 0.25
    got = metrics.tokenized_bleu([HYPOTHESIS], [REFERENCE])
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    assert metrics.moses_tokenize([HYPOTHESIS]) == [
        "ein mann fährt mit dem fahrrad ."
    ]


def test_tokenized_bleu_has_a_brevity_penalty():
    # 5 hypothesis tokens, all matching, against 7 reference tokens.
    got = metrics.tokenized_bleu(["Ein Mann fährt mit einem"], [REFERENCE])
    np.testing.assert_allclose(got, 100 * np.exp(1 - 7 / 5), rtol=1e-9)


def test_tokenized_bleu_tokenizes_both_sides_alike():
    # Quotes, apostrophes and case differ only in form: the same tokenizer
    # on both sides sees the same tokens.
    hypothesis = 'Ein Schild mit der Aufschrift "Stopp" an Peter\'s Haus.'
    reference = 'ein Schild mit der Aufschrift " Stopp " an Peter\'s Haus .'
    got = metrics.tokenized_bleu([hypothesis], [reference])
    np.testing.assert_allclose(got, 100.0)
    assert "&quot;" in metrics.moses_tokenize([hypothesis])[0]


def test_sacre_bleu_is_cased_and_chrf_is_character_level():
    np.testing.assert_allclose(
        metrics.sacre_bleu([REFERENCE], [REFERENCE]), 100.0
    )
    lower = metrics.sacre_bleu([REFERENCE.lower()], [REFERENCE])
    assert lower < 99.0
    np.testing.assert_allclose(
        metrics.tokenized_bleu([REFERENCE.lower()], [REFERENCE]), 100.0
    )
    np.testing.assert_allclose(metrics.chrf([REFERENCE], [REFERENCE]), 100.0)
    # One word changed keeps most character n-grams: chrF well above BLEU.
    close = metrics.chrf([HYPOTHESIS], [REFERENCE])
    assert metrics.sacre_bleu([HYPOTHESIS], [REFERENCE]) < close < 100.0
    assert metrics.chrf(["xyz"], ["abc"]) == 0.0


def test_corpus_lengths_must_match():
    with pytest.raises(ValueError, match="Received: 2 hypotheses and 1"):
        metrics.tokenized_bleu(["a", "b"], ["a"])


DATA = os.environ.get("KERAS_ATTENTION_DATA")


@pytest.mark.skipif(
    not DATA or not os.path.isdir(os.path.join(DATA or "", "multi30k")),
    reason="Multi30k not staged (set KERAS_ATTENTION_DATA)",
)
@pytest.mark.parametrize("split", ["test2016", "test2017"])
def test_moses_tokenize_reproduces_the_multi30k_tokenized_references(split):
    _, references = load_multi30k(split, data_dir=DATA)
    year = split[-4:]
    path = os.path.join(
        DATA, "multi30k", "tok", f"test_{year}_flickr.lc.norm.tok.de.gz"
    )
    with gzip.open(path, "rt", encoding="utf-8") as f:
        shipped = [line.rstrip("\n") for line in f]
    assert metrics.moses_tokenize(references) == shipped
