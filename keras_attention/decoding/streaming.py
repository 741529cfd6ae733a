"""Streaming: each new token handed out as soon as it is produced.

`stream` runs the steps of `greedy_search` and `sample` one by one in
Python (eager mode, any backend) and yields the tokens of every step, so a
caller can print or send them while the model goes on. It gives the tokens
the compiled searches give (`tests/decoding/streaming_test.py`).
"""

import contextlib
import dataclasses

import keras
import numpy as np
from keras import ops

from keras_attention.decoding.greedy import start_token_loop
from keras_attention.decoding.greedy import token_step
from keras_attention.decoding.sampling import sampling_chooser
from keras_attention.decoding.sampling import sampling_uniforms
from keras_attention.decoding.specs import Greedy
from keras_attention.decoding.specs import Sampling
from keras_attention.decoding.specs import from_arguments


def stream(
    model,
    encoder_token_ids,
    start_id=None,
    end_id=None,
    temperature=0.0,
    top_k=None,
    top_p=None,
    seed=None,
    max_extra_length=50,
    max_length=None,
    min_length=0,
    no_repeat_ngram_size=0,
    spec=None,
):
    """Yields each step's new tokens as they are produced.

    Greedy search by default (`temperature=0`); else sampling as `sample`
    draws: the same seed, the same tokens.

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
        max_extra_length, max_length, min_length, no_repeat_ngram_size: as
            for `greedy_search`.
        spec: a `keras_attention.decoding.Greedy` or `Sampling` holding
            these options instead (`start_id` and `end_id` may still come
            as arguments). Defaults to `None`.

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
    spec = from_arguments(
        Sampling,
        as_sampling(spec),
        stream,
        start_id,
        end_id,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        seed=seed,
        max_extra_length=max_extra_length,
        max_length=max_length,
        min_length=min_length,
        no_repeat_ngram_size=no_repeat_ngram_size,
    )
    ids = spec.check_inputs(model, encoder_token_ids)
    length = spec.output_length(model, ops.shape(ids)[1])
    choose = sampling_chooser(spec, sampling_uniforms(model, spec, ids))
    with _no_grad():
        context, loop = start_token_loop(model, spec, ids, choose)
    while int(loop.step) < length and not bool(np.all(_numpy(loop.finished))):
        before = _numpy(loop.lengths)  # tokens counted so far per row
        with _no_grad():
            loop = token_step(context, loop)
        step, tokens = int(loop.step), _numpy(loop.tokens)
        produced = _numpy(loop.lengths) > before
        if produced.any():
            yield np.where(produced, tokens[:, step], 0).astype("int32")


def as_sampling(spec):
    """Greedy search is sampling at temperature 0."""
    if isinstance(spec, Greedy):
        return Sampling(temperature=0.0, **dataclasses.asdict(spec))
    return spec


def _numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def _no_grad():
    if keras.backend.backend() == "torch":
        import torch

        return torch.no_grad()
    return contextlib.nullcontext()
