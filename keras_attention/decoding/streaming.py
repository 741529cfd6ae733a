"""Streaming: each new token handed out as soon as it is produced.

`stream` runs the steps of `greedy_search` and `sample` one by one in
Python (eager mode, any backend) and yields the tokens of every step, so a
caller can print or send them while the model goes on. It gives the tokens
the compiled searches give (`tests/decoding/streaming_test.py`).
"""

import contextlib

import keras
import numpy as np
from keras import ops

from keras_attention.decoding.greedy import start_token_loop
from keras_attention.decoding.greedy import token_step
from keras_attention.decoding.rules import make_rules
from keras_attention.decoding.sampling import check_sampling
from keras_attention.decoding.sampling import sampling_chooser
from keras_attention.decoding.settings import check_sources
from keras_attention.decoding.settings import output_length


def stream(
    model,
    encoder_token_ids,
    start_id,
    end_id,
    temperature=0.0,
    top_k=None,
    top_p=None,
    seed=None,
    max_extra_length=50,
    max_length=None,
    min_length=0,
    no_repeat_ngram_size=0,
):
    """Yields each step's new tokens as they are produced.

    Greedy search by default (`temperature=0`); with a temperature, top-k
    or top-p, sampling as `sample` draws, with the same seed the same
    tokens. A decoder-only model's prompts are prefilled in one call.

    Args:
        model: a `keras_attention.models.Transformer` or
            `keras_attention.models.TransformerLanguageModel` (or a model
            with the same decoding protocol).
        encoder_token_ids: int array `(B, S)`, `0` = padding: the sources,
            or the prompts of a decoder-only model.
        start_id: int. First decoder input token.
        end_id: int, or a list of ints: the tokens that end a sentence
            (the length limit forces the first).
        temperature, top_k, top_p, seed: as for `sample`. Defaults to
            greedy search.
        max_extra_length: int. Defaults to `50`; see `greedy_search`.
        max_length: int. Defaults to the model's `max_sequence_length`.
        min_length, no_repeat_ngram_size: as for `greedy_search`.

    Yields:
        int32 NumPy arrays `(B,)`: at every step where some row produced
        a token, each row's new token, or `0` for a row that produced none
        (still reading its prompt, or finished). The last token a row
        yields is `end_id`.

    Example:

    ```python
    for tokens in keras_attention.decoding.stream(
        model, prompts, start_id=1, end_id=2, top_p=0.9, seed=3
    ):
        print(tokenizer.id_to_piece(int(tokens[0])), end=" ", flush=True)
    ```
    """
    check_sampling(temperature, top_k, top_p)
    ids = check_sources(model, encoder_token_ids, max_length)
    rules = make_rules(end_id, min_length, no_repeat_ngram_size)
    settings = ("stream", start_id, rules, max_extra_length, max_length)
    settings += (True, float(temperature), top_k, top_p, True)
    batch, source_length = ops.shape(ids)
    length = output_length(model, source_length, settings)
    uniforms = keras.random.uniform((length, batch), seed=seed)
    choose = sampling_chooser(settings, uniforms)
    with _no_grad():
        context, loop = start_token_loop(model, settings, ids, choose)
    while int(loop[0]) < length and not bool(np.all(_numpy(loop[2]))):
        before = _numpy(loop[4])  # tokens counted so far per row
        with _no_grad():
            loop = token_step(context, *loop)
        step, tokens = int(loop[0]), _numpy(loop[1])
        produced = _numpy(loop[4]) > before
        if produced.any():
            yield np.where(produced, tokens[:, step], 0).astype("int32")


def _numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def _no_grad():
    if keras.backend.backend() == "torch":
        import torch

        return torch.no_grad()
    return contextlib.nullcontext()
