"""Token-by-token search: greedy, or sampled through a chooser.

One loop serves both: at every step the next token's log-probabilities
`(B, V)` go to a chooser (`argmax` for greedy search, a draw from the
processed distribution for sampling, `decoding.sampling`), then the length
limit and, for a decoder-only model, the prompt force their tokens.
"""

import keras
from keras import ops

from keras_attention.decoding.loop import compile_search
from keras_attention.decoding.rules import banned_tokens
from keras_attention.decoding.rules import is_end
from keras_attention.decoding.rules import make_rules
from keras_attention.decoding.settings import NEGATIVE
from keras_attention.decoding.settings import check_sources
from keras_attention.decoding.settings import continuations
from keras_attention.decoding.settings import count_prompt_tokens
from keras_attention.decoding.settings import decoder_only
from keras_attention.decoding.settings import initial_tokens
from keras_attention.decoding.settings import length_limits
from keras_attention.decoding.settings import output_length
from keras_attention.decoding.state import initial_state
from keras_attention.decoding.state import next_token_log_probs
from keras_attention.decoding.state import prefill
from keras_attention.ops.writes import slice_update


def greedy_search(
    model,
    encoder_token_ids,
    start_id,
    end_id,
    max_extra_length=50,
    max_length=None,
    use_cache=True,
    jit_compile=False,
    prefill=True,
    min_length=0,
    no_repeat_ngram_size=0,
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

    Returns:
        int32 tensor `(B, L)`: the decoded tokens after `start_id` (after
        the prompt, for a decoder-only model), each row ending with
        `end_id` and then padded with `0`.
    """
    rules = make_rules(end_id, min_length, no_repeat_ngram_size)
    settings = ("greedy", start_id, rules, max_extra_length, max_length)
    settings += (use_cache, bool(prefill))
    run = compile_search(model, settings, greedy_fn, jit_compile)
    return run(check_sources(model, encoder_token_ids, max_length))[0]


def greedy_fn(model, settings):
    """The greedy search for `settings`: `run(encoder_token_ids)` ->
    `(tokens, log P, lengths)`."""

    def run(encoder_token_ids):
        return token_loop(model, settings, encoder_token_ids, argmax_chooser)

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


def token_loop(model, settings, encoder_token_ids, choose):
    """Decodes one token per step with `choose(log_probs (B, V), step)`.

    Returns `(tokens (B, W), log P (B,), lengths (B,))`: the chosen
    tokens, the sum of their log-probabilities and their count, end token
    included (the prompt's tokens not counted).
    """
    context, loop = start_token_loop(model, settings, encoder_token_ids, choose)
    length = context["length"]

    def cond(step, tokens, finished, scores, lengths, self_cache):
        return ops.logical_and(
            ops.less(step, length), ops.logical_not(ops.all(finished))
        )

    def body(*loop):
        return token_step(context, *loop)

    _, tokens, _, scores, lengths, _ = ops.while_loop(cond, body, loop)
    return finish_token_loop(context, tokens), scores, lengths


def start_token_loop(model, settings, encoder_token_ids, choose):
    """`(context, loop state)` of `token_loop`: the fixed values every step
    reads, and `(step, tokens, finished, log P, lengths, cache)`, after
    the prefill of a decoder-only model's prompts."""
    start_id, _, extra, _, use_cache = settings[1:6]
    batch, source_length = ops.shape(encoder_token_ids)
    length = output_length(model, source_length, settings)
    state = initial_state(model, encoder_token_ids, length, 1, use_cache)
    prompt_lengths, first_step = None, 0
    if decoder_only(model):
        prompt_lengths = count_prompt_tokens(encoder_token_ids)  # (B,)
        tokens = initial_tokens(encoder_token_ids, start_id, length, 1)
        state, first_step = prefill(
            model, encoder_token_ids, tokens, state, use_cache, settings[-1]
        )
    else:
        tokens = ops.concatenate(
            [
                ops.full((batch, 1), start_id, "int32"),
                ops.zeros((batch, length), "int32"),
            ],
            axis=1,
        )  # (B, L + 1)
    context = dict(
        model=model,
        settings=settings,
        state=state,
        length=length,
        limits=length_limits(encoder_token_ids, extra, length),
        prompt_lengths=prompt_lengths,
        choose=choose,
    )
    loop = (
        ops.convert_to_tensor(first_step, "int32"),
        tokens,
        ops.zeros((batch,), "bool"),  # finished
        ops.zeros((batch,), "float32"),  # log P of the output
        ops.zeros((batch,), "int32"),  # its tokens, end included
        state[0],
    )
    return context, loop


def finish_token_loop(context, tokens):
    """The token buffer `(B, L + 1)` -> the output tokens `(B, W)`."""
    length, extra = context["length"], context["settings"][3]
    if context["prompt_lengths"] is not None:
        width = min(max(extra, 1), length)
        return continuations(tokens, context["prompt_lengths"], width, length)
    return tokens[:, 1:]


def token_step(context, step, tokens, finished, scores, lengths, self_cache):
    """One step of `token_loop`: choose, force, record."""
    rules, use_cache = context["settings"][2], context["settings"][5]
    log_probs, self_cache = next_token_log_probs(
        context["model"],
        step,
        tokens,
        (self_cache,) + context["state"][1:],
        use_cache,
        context["length"],
    )
    banned = banned_tokens(
        rules, tokens, step, lengths, ops.shape(log_probs)[-1]
    )
    allowed = log_probs
    if banned is not None:
        allowed = ops.where(banned, NEGATIVE, log_probs)
    chosen = context["choose"](allowed, step)
    forced = ops.greater_equal(step + 1, context["limits"])
    chosen = ops.where(forced, rules.end_ids[0], chosen)
    counted = ops.logical_not(finished)
    in_prompt = None
    if context["prompt_lengths"] is not None:
        # Inside its prompt a row takes the prompt's next token.
        in_prompt = ops.less_equal(step + 1, context["prompt_lengths"])
        prompt_token = ops.take(tokens, step + 1, axis=1)
        chosen = ops.where(in_prompt, prompt_token, chosen)
        counted = ops.logical_and(counted, ops.logical_not(in_prompt))
    picked = ops.take_along_axis(log_probs, ops.expand_dims(chosen, 1), axis=1)[
        :, 0
    ]
    scores = scores + ops.where(counted, picked, 0.0)
    lengths = lengths + ops.cast(counted, "int32")
    chosen = ops.where(finished, 0, chosen)
    tokens = slice_update(tokens, [0, step + 1], ops.expand_dims(chosen, 1))
    ends = is_end(chosen, rules)
    if in_prompt is not None:
        ends = ops.logical_and(ends, ops.logical_not(in_prompt))
    finished = ops.logical_or(finished, ends)
    return step + 1, tokens, finished, scores, lengths, self_cache
