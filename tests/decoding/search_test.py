import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.models import Transformer

START, END = 1, 2
# Up to source length + 4 output tokens keeps the eager torch loop short.
SHORT = {"max_extra_length": 4}
SHORT2 = {"max_extra_length": 2}


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(3)
    return Transformer(
        vocabulary_size=37,
        num_layers=2,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=32,
    )


SOURCES = np.array(
    [[5, 6, 7, 8, 9, 2], [10, 11, 2, 0, 0, 0], [12, 13, 14, 2, 0, 0]], "int32"
)


def test_cached_greedy_equals_uncached(model):
    cached = decoding.greedy_search(model, SOURCES, START, END)
    uncached = decoding.greedy_search(
        model, SOURCES, START, END, use_cache=False
    )
    np.testing.assert_array_equal(to_numpy(cached), to_numpy(uncached))


def test_cached_beam_equals_uncached(model):
    cached, s1 = decoding.beam_search(
        model, SOURCES, START, END, beam_size=3, return_scores=True, **SHORT
    )
    uncached, s2 = decoding.beam_search(
        model,
        SOURCES,
        START,
        END,
        beam_size=3,
        return_scores=True,
        use_cache=False,
        **SHORT,
    )
    np.testing.assert_array_equal(to_numpy(cached), to_numpy(uncached))
    np.testing.assert_allclose(to_numpy(s1), to_numpy(s2), atol=1e-4)


def test_beam_one_with_alpha_zero_is_greedy(model):
    greedy = decoding.greedy_search(model, SOURCES, START, END, **SHORT)
    beam = decoding.beam_search(
        model, SOURCES, START, END, beam_size=1, alpha=0.0, **SHORT
    )
    np.testing.assert_array_equal(to_numpy(beam), to_numpy(greedy))


def test_outputs_end_within_source_length_plus_extra(model):
    tokens = to_numpy(
        decoding.greedy_search(model, SOURCES, START, END, max_extra_length=2)
    )
    lengths = (SOURCES != 0).sum(1)
    assert tokens.shape[1] == SOURCES.shape[1] + 2
    for row, limit in zip(tokens, lengths + 2):
        ends = np.flatnonzero(row == END)
        assert ends.size and ends[0] < limit
        assert np.all(row[ends[0] + 1 :] == 0)
    stripped = decoding.strip_special(tokens, END)
    assert all(END not in ids and 0 not in ids for ids in stripped)


class ChainModel:
    """A fixed bigram table: after any token, 'a' (id 3) has probability
    0.6 and the end token 0.4; after the start token both 0.5. Short
    outputs have the higher raw log-probability, long ones win under a
    strong length penalty."""

    max_sequence_length = 8
    variables = []

    def __init__(self):
        table = np.full((4, 4), -30.0, "float32")
        table[START, [END, 3]] = np.log([0.5, 0.5])
        table[3, [END, 3]] = np.log([0.4, 0.6])
        self.table = table

    def encode(self, ids):
        batch, length = ops.shape(ids)
        return ops.zeros((batch, length, 1)), ops.not_equal(ids, 0)

    def initial_cache(self, encoded, length):
        return ops.zeros((ops.shape(encoded)[0], 1)), ops.zeros((1,))

    def decode_step(self, ids, index, self_cache, cross_cache, mask):
        return ops.take(self.table, ids, axis=0), self_cache

    def decode(self, ids, encoded, mask):
        return ops.take(self.table, ids, axis=0)


def test_length_penalty_changes_the_ranking():
    chain = ChainModel()
    source = np.array([[5, 5, 5]], "int32")
    plain = decoding.beam_search(
        chain, source, START, END, beam_size=2, alpha=0.0, **SHORT2
    )
    assert to_numpy(plain)[0].tolist()[:1] == [END]
    long = decoding.beam_search(
        chain, source, START, END, beam_size=2, alpha=6.0, **SHORT2
    )
    row = to_numpy(long)[0].tolist()
    # Forced to end at source length + 2 = 5 tokens: "a a a a <end>".
    assert row[: row.index(END) + 1] == [3, 3, 3, 3, END]


def test_bad_arguments_name_the_value(model):
    with pytest.raises(ValueError, match="Received: beam_size=0"):
        decoding.beam_search(model, SOURCES, START, END, beam_size=0)
    with pytest.raises(ValueError, match="Received: alpha=-1"):
        decoding.beam_search(model, SOURCES, START, END, alpha=-1)
    with pytest.raises(ValueError, match="max_sequence_length=32"):
        decoding.greedy_search(model, np.ones((1, 40), "int32"), START, END)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        decoding.greedy_search(model, np.ones((3,), "int32"), START, END)
