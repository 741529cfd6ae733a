"""Rules every search follows: several end ids, a minimum length, no
repeated n-gram.

A search's spec gives its `Rules` (`decoding.specs`). At
every step `banned_tokens` gives the tokens a hypothesis may not take
next: its end ids while it has fewer than `min_length` tokens (the prompt
not counted, the end token not counted), and any token that would repeat
an n-gram of `no_repeat_ngram_size` tokens already in its buffer (the
start token, the prompt and the output so far). The length limit still
forces the first end id.
"""

from typing import NamedTuple

from keras import ops

from keras_attention.utils.validation import check_non_negative_int


class Rules(NamedTuple):
    """The rules of a search: its end ids (a tuple), the tokens a
    sentence has at least before its end, and the size of the n-grams it
    may not repeat (`0`: any)."""

    end_ids: tuple
    min_length: int
    no_repeat_ngram_size: int


def make_rules(end_id, min_length=0, no_repeat_ngram_size=0):
    """Checks the arguments and returns the hashable `Rules`."""
    ids = (end_id,) if isinstance(end_id, int) else tuple(end_id)
    if not ids or not all(
        isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in ids
    ):
        raise ValueError(
            "Argument `end_id` must be a positive int or a non-empty list of "
            f"them. Received: end_id={end_id!r}"
        )
    check_non_negative_int("min_length", min_length)
    check_non_negative_int("no_repeat_ngram_size", no_repeat_ngram_size)
    return Rules(ids, min_length, no_repeat_ngram_size)


def is_end(tokens, rules):
    """Whether each of `tokens` (int, any shape) is one of the end ids."""
    ends = [ops.equal(tokens, i) for i in rules.end_ids]
    result = ends[0]
    for end in ends[1:]:
        result = ops.logical_or(result, end)
    return result


def banned_tokens(rules, tokens, step, generated, vocabulary_size):
    """Bool `(B', V)`: the tokens each row may not take at position
    `step + 1`, or `None` when no rule applies.

    Args:
        rules: `Rules`.
        tokens: int `(B', L + 1)`, the token buffers (positions up to
            `step` are filled).
        step: scalar int, the position of the last filled token.
        generated: int `(B',)` or `(B', 1)`: tokens each row has produced
            so far (the prompt not counted).
        vocabulary_size: int `V`.
    """
    banned = None
    vocabulary = ops.arange(vocabulary_size)
    if rules.min_length:
        short = ops.less(ops.reshape(generated, (-1, 1)), rules.min_length)
        ends = is_end(vocabulary, rules)[None, :]  # (1, V)
        banned = ops.logical_and(short, ends)  # (B', V)
    if rules.no_repeat_ngram_size:
        repeats = repeated_ngrams(
            tokens, step, rules.no_repeat_ngram_size, vocabulary_size
        )
        banned = repeats if banned is None else ops.logical_or(banned, repeats)
    return banned


def repeated_ngrams(tokens, step, n, vocabulary_size):
    """Bool `(B', V)`: tokens `t` such that the n-gram of the `n - 1`
    tokens ending at `step` followed by `t` already occurs in positions
    `0 .. step` of the buffer."""
    width = ops.shape(tokens)[1]
    starts = ops.arange(width - n + 1, dtype="int32")  # (J,)
    positions = starts[:, None] + ops.arange(n, dtype="int32")[None, :]
    windows = ops.take(tokens, ops.reshape(positions, (-1,)), axis=1)
    windows = ops.reshape(windows, (-1, width - n + 1, n))  # (B', J, n)
    # The n-gram must end at or before `step`.
    valid = ops.less_equal(starts + n - 1, step)  # (J,)
    if n > 1:
        prefix_positions = step - (n - 2) + ops.arange(n - 1, dtype="int32")
        prefix = ops.take(tokens, ops.maximum(prefix_positions, 0), axis=1)
        same = ops.all(
            ops.equal(windows[:, :, : n - 1], prefix[:, None, :]), axis=-1
        )  # (B', J)
        valid = ops.logical_and(valid, ops.greater_equal(step, n - 2))
        match = ops.logical_and(same, valid[None, :])
    else:
        match = ops.broadcast_to(valid[None, :], ops.shape(windows)[:2])
    following = windows[:, :, n - 1]  # (B', J)
    hits = (
        ops.one_hot(following, vocabulary_size)
        * ops.cast(match, "float32")[:, :, None]
    )
    return ops.greater(ops.max(hits, axis=1), 0.0)  # (B', V)
