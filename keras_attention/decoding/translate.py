"""Translation of sentences with a trained `Transformer` and its
SentencePiece tokenizer: `translate`."""

import numpy as np

from keras_attention.data.translation import END_ID
from keras_attention.data.translation import START_ID
from keras_attention.data.translation import check_tokenizer_matches
from keras_attention.data.translation import decode_ids
from keras_attention.data.translation import encode_sentences
from keras_attention.decoding.beam import beam_search
from keras_attention.decoding.greedy import greedy_search
from keras_attention.decoding.settings import strip_special


def translate(
    model,
    tokenizer,
    sentences,
    beam_size=4,
    alpha=0.6,
    batch_size=64,
    max_extra_length=50,
    search=None,
):
    """Translates sentences with beam search (greedy when `beam_size=1`).

    Sources longer than `model.max_sequence_length` subwords are truncated
    to it (keeping the end id). Empty sentences raise a `ValueError`.
    `search` is the beam search function, with the arguments of
    `keras_attention.decoding.beam_search` (the default).

    Returns:
        A list of translated strings.
    """
    check_tokenizer_matches(tokenizer, model.vocabulary_size)
    encoded = encode_sentences(
        tokenizer,
        sentences,
        max_length=model.max_sequence_length,
        allow_empty=False,
    )
    # Sort by length so batches carry little padding; restore order after.
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    outputs = [None] * len(encoded)
    for begin in range(0, len(order), batch_size):
        chunk = order[begin : begin + batch_size]
        # Pad to a multiple of 8 to limit the number of compiled shapes.
        width = max(len(encoded[i]) for i in chunk)
        width = min(-(-width // 8) * 8, model.max_sequence_length)
        batch = np.zeros((batch_size, width), "int32")
        batch[:, 0] = END_ID  # filler rows decode a one-token source
        for row, i in enumerate(chunk):
            batch[row, : len(encoded[i])] = encoded[i]
        if beam_size == 1:
            tokens = greedy_search(
                model, batch, START_ID, END_ID, max_extra_length
            )
        else:
            tokens = (search or beam_search)(
                model,
                batch,
                START_ID,
                END_ID,
                beam_size=beam_size,
                alpha=alpha,
                max_extra_length=max_extra_length,
            )
        rows = strip_special(tokens, END_ID)[: len(chunk)]
        for i, text in zip(chunk, decode_ids(tokenizer, rows)):
            outputs[i] = text
    return outputs
