import numpy as np
import pytest
from keras import ops

from keras_attention import decoding

START, END, OTHER_END = 1, 2, 7
# Fixed next-token logits: the end token first, then 5, 6, 7, ...
LOGITS = np.array([0.0, 0.0, 3.0, 0.0, 0.0, 2.5, 2.0, 1.5, 1.0], "float32")
PROMPTS = np.array([[4, 3], [3, 0]], "int32")


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


class FixedLogitsModel:
    """A decoder-only "model" whose next-token logits never change."""

    variables = []
    max_sequence_length = 12

    def initial_cache(self, batch_size, max_length):
        return ops.zeros((batch_size, 1))

    def decode_step(self, token_ids, index, self_attention_cache):
        rows = ops.ones(ops.shape(token_ids) + (1,)) * LOGITS
        return rows, self_attention_cache

    def decode(self, token_ids):
        return ops.ones(ops.shape(token_ids) + (1,)) * LOGITS


def streamed(model, prompts, start, end, **kwargs):
    steps = list(decoding.stream(model, prompts, start, end, **kwargs))
    width = kwargs["max_extra_length"]
    tokens = np.zeros((len(prompts), width), "int32")
    for i in range(len(prompts)):
        row = [int(s[i]) for s in steps if s[i] != 0]
        tokens[i, : len(row)] = row
    return tokens


SEARCHES = {
    "greedy": decoding.greedy_search,
    "beam": lambda *a, **k: decoding.beam_search(*a, beam_size=2, **k),
    "sample": lambda *a, **k: decoding.sample(*a, top_k=1, seed=0, **k),
    "stream": streamed,
}


def decode(search, **kwargs):
    tokens = SEARCHES[search](
        FixedLogitsModel(), PROMPTS, START, kwargs.pop("end", END), **kwargs
    )
    return [
        row for row in decoding.strip_special(tokens, [END, OTHER_END, 0])
    ], to_numpy(tokens)


@pytest.mark.parametrize("search", list(SEARCHES))
def test_min_length_holds_back_the_end(search):
    _, plain = decode(search, max_extra_length=6)
    assert np.all(plain[:, 0] == END)  # the end comes first without it
    _, tokens = decode(search, max_extra_length=6, min_length=3)
    for row in tokens:
        assert list(row).index(END) == 3


@pytest.mark.parametrize("search", list(SEARCHES))
@pytest.mark.parametrize("size", [1, 2])
def test_no_repeated_ngram(search, size):
    # Without the end token's lead, the search would repeat token 5.
    kwargs = dict(max_extra_length=5, min_length=4)
    _, plain = decode(search, **kwargs)
    assert plain[0, 1] == plain[0, 0] == 5
    _, tokens = decode(search, no_repeat_ngram_size=size, **kwargs)
    for prompt, row in zip(PROMPTS, tokens):
        whole = [START] + [t for t in prompt if t] + list(row)
        whole = whole[: whole.index(END)]  # up to the end token
        grams = [tuple(whole[i : i + size]) for i in range(len(whole))]
        grams = [g for g in grams if len(g) == size]
        assert len(grams) == len(set(grams)), whole


@pytest.mark.parametrize("search", list(SEARCHES))
def test_several_end_ids(search):
    # With 8 and 6 as the end ids, 2 is an ordinary token: without
    # repeats the rows read 2, 5, 6, and 6, the second end id, ends them.
    kwargs = dict(max_extra_length=6, no_repeat_ngram_size=1)
    _, tokens = decode(search, end=[8, 6], **kwargs)
    if search == "beam":
        # The length penalty prefers the short `6` to `2, 5, 6`.
        assert tokens[:, 0].tolist() == [6, 6] and not np.any(tokens[:, 1:])
        return
    for row in tokens:
        assert list(row[:3]) == [END, 5, 6]
        assert not np.any(row[3:])
    assert decoding.strip_special(tokens, [8, 6]) == [[END, 5]] * 2


def test_bad_rules_name_the_value():
    model = FixedLogitsModel()
    with pytest.raises(ValueError, match="end_id=\\[\\]"):
        decoding.greedy_search(model, PROMPTS, START, [])
    with pytest.raises(ValueError, match="min_length=-1"):
        decoding.greedy_search(model, PROMPTS, START, END, min_length=-1)
