"""What every search shares: argument checks, lengths and the token buffer.

For an encoder-decoder model the searches read sources; for a
decoder-only model (no `encode` method) they read prompts, right-padded
with `0`: the decoder reads `start_id`, then each row's prompt (its tokens
are forced, not chosen), then the continuation, which is what a search
returns. A sentence stops at an end id, or is forced to end at
`source_length + max_extra_length` tokens (`source_length` counts the
non-padding source tokens), and never runs past `max_length`, which
defaults to `model.max_sequence_length`. For a decoder-only model these
counts include the prompt.
"""

import numpy as np
from keras import ops

from keras_attention.utils.validation import check_positive_int

# Scores of impossible continuations; finite so that sums stay finite.
NEGATIVE = -1e9
# Rank of an extension that ends, among those that may stay live.
DEAD = -1e30


def check_sources(model, encoder_token_ids, max_length):
    ids = ops.convert_to_tensor(encoder_token_ids, dtype="int32")
    shape = tuple(ops.shape(ids))
    if len(shape) != 2 or shape[1] == 0:
        raise ValueError(
            "`encoder_token_ids` must have shape (batch, source_length) with "
            f"source_length >= 1. Received: encoder_token_ids with shape "
            f"{shape}"
        )
    limit = model.max_sequence_length
    if shape[1] > limit:
        raise ValueError(
            f"Sources are longer than the model's max_sequence_length="
            f"{limit}. Truncate them first (keras_attention.data."
            "encode_sentences does). Received: encoder_token_ids with shape "
            f"{shape}"
        )
    if max_length is not None:
        check_positive_int("max_length", max_length)
    if decoder_only(model):
        room = limit if max_length is None else min(limit, max_length)
        if shape[1] >= room:
            raise ValueError(
                "Prompts must be shorter than max_length and the model's "
                f"max_sequence_length ({room} here), to leave room for a "
                "continuation. Received: encoder_token_ids with shape "
                f"{shape}"
            )
    return ids


def decoder_only(model):
    """Whether `model` is a decoder-only language model (no `encode`)."""
    return not hasattr(model, "encode")


def count_prompt_tokens(encoder_token_ids):
    # (B,) number of non-padding tokens per row.
    return ops.sum(ops.cast(ops.not_equal(encoder_token_ids, 0), "int32"), 1)


def initial_tokens(encoder_token_ids, start_id, length, repeats):
    """The token buffer `(B', L + 1)`: the start token, then zeros; for a
    decoder-only model the prompts `(B', P)` follow the start token."""
    rows = ops.shape(encoder_token_ids)[0] * repeats
    prompts = encoder_token_ids
    if repeats > 1:
        prompts = ops.repeat(prompts, repeats, axis=0)
    prompt_length = ops.shape(prompts)[1]
    return ops.concatenate(
        [
            ops.full((rows, 1), start_id, "int32"),
            prompts,
            ops.zeros((rows, length - prompt_length), "int32"),
        ],
        axis=1,
    )


def continuations(tokens, prompt_lengths, width, length):
    """The `width` tokens after each row's prompt, `(B', W)`, zero-padded.

    `tokens` `(B', L + 1)` is the buffer: start token, prompt, continuation.
    """
    offsets = ops.expand_dims(prompt_lengths + 1, 1) + ops.arange(
        width, dtype="int32"
    )  # (B', W) buffer positions
    picked = ops.take_along_axis(tokens, ops.minimum(offsets, length), axis=1)
    return ops.where(ops.less_equal(offsets, length), picked, 0)


def length_limits(encoder_token_ids, extra, output_length):
    # (B,) number of tokens each sentence may produce, end token included.
    lengths = count_prompt_tokens(encoder_token_ids)
    return ops.minimum(lengths + extra, output_length)


def strip_special(tokens, end_id):
    """Cuts each row of decoded ids at its first `end_id`.

    Args:
        tokens: int array `(B, L)` from `greedy_search` or `beam_search`.
        end_id: int, or a list of ints (several end ids).

    Returns:
        A list of `B` lists of ints, without `end_id` and padding.
    """
    rows = np.asarray(ops.convert_to_numpy(tokens))
    stops = {0, end_id} if isinstance(end_id, int) else {0, *end_id}
    result = []
    for row in rows:
        ids = []
        for token in row.tolist():
            if token in stops:
                break
            ids.append(token)
        result.append(ids)
    return result
