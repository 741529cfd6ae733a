import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.models import Transformer
from keras_attention.models import TransformerLanguageModel

START, END = 1, 2


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def rows(steps, batch):
    """The streamed steps `(B,)` -> each row's tokens, in order."""
    return [[int(s[i]) for s in steps if s[i] != 0] for i in range(batch)]


def searched_rows(tokens):
    """Search output `(B, W)`, zero-padded -> each row's tokens."""
    return [[int(t) for t in row if t != 0] for row in to_numpy(tokens)]


@pytest.fixture(scope="module")
def language_model():
    keras.utils.set_random_seed(6)
    return TransformerLanguageModel(
        vocabulary_size=29,
        num_layers=1,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=20,
    )


PROMPTS = np.array([[5, 6, 7, 8], [9, 10, 0, 0]], "int32")


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"top_k": 6, "temperature": 1.3, "seed": 2}],
    ids=["greedy", "sampling"],
)
def test_stream_gives_the_searches_tokens(language_model, kwargs):
    search = decoding.sample if kwargs else decoding.greedy_search
    expected = search(
        language_model, PROMPTS, START, END, max_extra_length=9, **kwargs
    )
    steps = list(
        decoding.stream(
            language_model, PROMPTS, START, END, max_extra_length=9, **kwargs
        )
    )
    assert all(s.shape == (2,) and s.dtype == np.int32 for s in steps)
    assert rows(steps, 2) == searched_rows(expected)


def test_stream_hands_out_tokens_before_the_end():
    # A generator: the first step's tokens arrive before the rest run.
    keras.utils.set_random_seed(2)
    model = Transformer(
        vocabulary_size=23,
        num_layers=1,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    sources = np.array([[5, 6, 7, 2], [8, 2, 0, 0]], "int32")
    generator = decoding.stream(model, sources, START, END)
    first = next(generator)
    assert first.shape == (2,) and np.all(first != 0)
    steps = [first] + list(generator)
    expected = decoding.greedy_search(model, sources, START, END)
    assert rows(steps, 2) == searched_rows(expected)
