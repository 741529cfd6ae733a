"""Token-by-token search: greedy, or sampled through a chooser.

One loop serves both: at every step the next token's log-probabilities
`(B, V)` go to a chooser (`argmax` for greedy search, a draw from the
processed distribution for sampling, `decoding.sampling`), then the length
limit and, for a decoder-only model, the prompt force their tokens.
"""

from typing import Any
from typing import NamedTuple

import keras
from keras import ops

from keras_attention.decoding.loop import compile_search
from keras_attention.decoding.rules import banned_tokens
from keras_attention.decoding.rules import is_end
from keras_attention.decoding.settings import NEGATIVE
from keras_attention.decoding.settings import continuations
from keras_attention.decoding.settings import count_prompt_tokens
from keras_attention.decoding.settings import decoder_only
from keras_attention.decoding.settings import initial_tokens
from keras_attention.decoding.settings import length_limits
from keras_attention.decoding.specs import Greedy
from keras_attention.decoding.specs import from_arguments
from keras_attention.decoding.state import initial_state
from keras_attention.decoding.state import next_token_log_probs
from keras_attention.decoding.state import prefill as prefill_cache
from keras_attention.ops.writes import slice_update


class TokenLoop(NamedTuple):
    """The loop state of `token_loop`, carried from step to step."""

    step: Any  # int32 scalar: the position of the last filled token
    tokens: Any  # (B, L + 1) the token buffer
    finished: Any  # (B,) bool: the row has produced an end id
    scores: Any  # (B,) float32: log P of the output so far
    lengths: Any  # (B,) int32: its tokens, end included
    self_cache: Any  # the self-attention cache


class TokenContext(NamedTuple):
    """What every step of `token_loop` reads and no step changes."""

    model: Any
    spec: Any  # `Greedy` or `Sampling`
    inputs: Any  # `decoding.state.StepInputs`
    length: int  # L
    limits: Any  # (B,) tokens each row may produce
    prompt_lengths: Any  # (B,) for a decoder-only model, else None
    choose: Any  # choose(log_probs (B, V), step) -> (B,) int32


def greedy_search(
    model,
    encoder_token_ids,
    start_id=None,
    end_id=None,
    max_extra_length=50,
    max_length=None,
    use_cache=True,
    jit_compile=False,
    prefill=True,
    min_length=0,
    no_repeat_ngram_size=0,
    spec=None,
):
    """Decodes by picking the most probable token at every step.

    Args:
        model: a `keras_attention.models.Transformer` or
            `keras_attention.models.TransformerLanguageModel` (or a model
            with the same `initial_cache` / `decode_step` protocol, see
            `keras_attention.decoding.state`).
        encoder_token_ids: int array `(B, S)`, `0` = padding: the sources,
            or the prompts of a decoder-only model.
        start_id: int. First decoder input token.
        end_id: int, or a list of ints: the tokens that end a sentence
            (the length limit forces the first).
        max_extra_length: int. A sentence is forced to end after
            `source_length + max_extra_length` tokens (a continuation after
            `max_extra_length`). Defaults to `50`.
        max_length: int. Cap on output tokens. Defaults to the model's
            `max_sequence_length`.
        use_cache: bool. Decode one token per step with the self- and
            cross-attention caches (`True`), or rerun the whole decoder at
            every step (`False`; same outputs, much slower).
        jit_compile: bool. On tensorflow, compile the search with XLA
            (`tf.function(jit_compile=True)`): the same outputs, faster
            steps (benchmarks/README.md), but one compilation per input
            shape. On jax the search is always compiled with XLA; torch
            runs it eagerly and refuses `True`. Defaults to `False`.
        prefill: bool. For a decoder-only model, feed the prompts in one
            call that fills the cache, then decode from there (`True`), or
            feed them one token per step (`False`); the same outputs.
            Defaults to `True`.
        min_length: int. Tokens a sentence has at least before its end
            (the prompt not counted). Defaults to `0`.
        no_repeat_ngram_size: int. If `n > 0`, no n-gram of `n` tokens
            occurs twice in a row's tokens (prompt included). Defaults to
            `0`.
        spec: a `keras_attention.decoding.Greedy` holding these options
            instead (`start_id` and `end_id` may still come as arguments).
            Defaults to `None`.

    Returns:
        int32 tensor `(B, L)`: the decoded tokens after `start_id` (after
        the prompt, for a decoder-only model), each row ending with
        `end_id` and then padded with `0`.
    """
    spec = from_arguments(
        Greedy,
        spec,
        greedy_search,
        start_id,
        end_id,
        max_extra_length=max_extra_length,
        max_length=max_length,
        use_cache=use_cache,
        prefill=prefill,
        min_length=min_length,
        no_repeat_ngram_size=no_repeat_ngram_size,
    )
    run = compile_search(model, spec, greedy_fn, jit_compile)
    return run(spec.check_inputs(model, encoder_token_ids))[0]


def greedy_fn(model, spec):
    """The greedy search for `spec`: `run(encoder_token_ids)` ->
    `(tokens, log P, lengths)`."""

    def run(encoder_token_ids):
        return token_loop(model, spec, encoder_token_ids, argmax_chooser)

    return run


def argmax_chooser(log_probs, step):
    """The most probable token of each row, int32 `(B,)`.

    On tensorflow and jax, the backend's own argmax: `keras.ops.argmax`
    on a CPU first moves `-0.0` below `0.0` (three more passes over the
    `(B, V)` log-probabilities at every step, about a tenth of a `tiny`
    greedy step on tensorflow); two tokens of a row never tie at zero.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.math.argmax(log_probs, axis=-1, output_type="int32")
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.argmax(log_probs, axis=-1).astype("int32")
    return ops.cast(ops.argmax(log_probs, axis=-1), "int32")


def token_loop(model, spec, encoder_token_ids, choose):
    """Decodes one token per step with `choose(log_probs (B, V), step)`.

    Returns `(tokens (B, W), log P (B,), lengths (B,))`: the chosen
    tokens, the sum of their log-probabilities and their count, end token
    included (the prompt's tokens not counted).
    """
    context, loop = start_token_loop(model, spec, encoder_token_ids, choose)

    def cond(*loop):
        loop = TokenLoop(*loop)
        return ops.logical_and(
            ops.less(loop.step, context.length),
            ops.logical_not(ops.all(loop.finished)),
        )

    def body(*loop):
        return tuple(token_step(context, TokenLoop(*loop)))

    loop = TokenLoop(*ops.while_loop(cond, body, tuple(loop)))
    return finish_token_loop(context, loop.tokens), loop.scores, loop.lengths


def start_token_loop(model, spec, encoder_token_ids, choose):
    """`(TokenContext, TokenLoop)` of `token_loop`: the fixed values every
    step reads, and the loop state after the prefill of a decoder-only
    model's prompts."""
    batch, source_length = ops.shape(encoder_token_ids)
    length = spec.output_length(model, source_length)
    inputs = initial_state(model, encoder_token_ids, length, 1, spec.use_cache)
    prompt_lengths, first_step = None, 0
    if decoder_only(model):
        prompt_lengths = count_prompt_tokens(encoder_token_ids)  # (B,)
        tokens = initial_tokens(encoder_token_ids, spec.start_id, length, 1)
        inputs, first_step = prefill_cache(
            model,
            encoder_token_ids,
            tokens,
            inputs,
            spec.use_cache,
            spec.prefill,
        )
    else:
        tokens = ops.concatenate(
            [
                ops.full((batch, 1), spec.start_id, "int32"),
                ops.zeros((batch, length), "int32"),
            ],
            axis=1,
        )  # (B, L + 1)
    context = TokenContext(
        model=model,
        spec=spec,
        inputs=inputs,
        length=length,
        limits=length_limits(encoder_token_ids, spec.max_extra_length, length),
        prompt_lengths=prompt_lengths,
        choose=choose,
    )
    loop = TokenLoop(
        step=ops.convert_to_tensor(first_step, "int32"),
        tokens=tokens,
        finished=ops.zeros((batch,), "bool"),
        scores=ops.zeros((batch,), "float32"),
        lengths=ops.zeros((batch,), "int32"),
        self_cache=inputs.self_cache,
    )
    return context, loop


def finish_token_loop(context, tokens):
    """The token buffer `(B, L + 1)` -> the output tokens `(B, W)`."""
    length = context.length
    if context.prompt_lengths is not None:
        width = min(max(context.spec.max_extra_length, 1), length)
        return continuations(tokens, context.prompt_lengths, width, length)
    return tokens[:, 1:]


def token_step(context, loop):
    """One step of `token_loop`: choose, force, record; the next
    `TokenLoop`."""
    step, tokens, finished = loop.step, loop.tokens, loop.finished
    rules = context.spec.rules
    log_probs, self_cache = next_token_log_probs(
        context.model,
        step,
        tokens,
        context.inputs._replace(self_cache=loop.self_cache),
        context.spec.use_cache,
        context.length,
    )
    banned = banned_tokens(
        rules, tokens, step, loop.lengths, ops.shape(log_probs)[-1]
    )
    allowed = log_probs
    if banned is not None:
        allowed = ops.where(banned, NEGATIVE, log_probs)
    chosen = context.choose(allowed, step)
    forced = ops.greater_equal(step + 1, context.limits)
    chosen = ops.where(forced, rules.end_ids[0], chosen)
    counted = ops.logical_not(finished)
    in_prompt = None
    if context.prompt_lengths is not None:
        # Inside its prompt a row takes the prompt's next token.
        in_prompt = ops.less_equal(step + 1, context.prompt_lengths)
        prompt_token = ops.take(tokens, step + 1, axis=1)
        chosen = ops.where(in_prompt, prompt_token, chosen)
        counted = ops.logical_and(counted, ops.logical_not(in_prompt))
    picked = ops.take_along_axis(log_probs, ops.expand_dims(chosen, 1), axis=1)[
        :, 0
    ]
    scores = loop.scores + ops.where(counted, picked, 0.0)
    lengths = loop.lengths + ops.cast(counted, "int32")
    chosen = ops.where(finished, 0, chosen)
    tokens = slice_update(tokens, [0, step + 1], ops.expand_dims(chosen, 1))
    ends = is_end(chosen, rules)
    if in_prompt is not None:
        ends = ops.logical_and(ends, ops.logical_not(in_prompt))
    finished = ops.logical_or(finished, ends)
    return TokenLoop(step + 1, tokens, finished, scores, lengths, self_cache)
