"""Greedy and beam search with decoder caches, for encoder-decoder models
and decoder-only language models.

Both searches take a model with one of two decoding interfaces:

- encoder-decoder, as `keras_attention.models.Transformer`: `encode(ids)`,
  `initial_cache(encoder_outputs, max_length)`, `decode_step(ids, index,
  self_attention_cache, cross_attention_cache, encoder_padding_mask)`,
  `decode(ids, encoder_outputs, encoder_padding_mask)`;
- decoder-only, as `keras_attention.models.TransformerLanguageModel` (no
  `encode` method): `initial_cache(batch_size, max_length)`,
  `decode_step(ids, index, self_attention_cache)`, `decode(ids)`.

Both also have `max_sequence_length`. The models of this package keep
their caches as one heads-first `(keys, values)` pair per layer
(`keras_attention.ops.key_value_cache`) and take the output projection
computed once before the loop (`decode_step(..., output_kernel=...)`).
For an encoder-decoder model
`encoder_token_ids` are the sources; for a decoder-only model they are the
prompts, right-padded with `0`: the decoder reads `start_id`, then each
row's prompt (its tokens are forced, not chosen), then the continuation,
which is what the search returns. The searches run batched and loop with
`keras.ops.while_loop`. On tensorflow the loop is traced once per input
shape with `tf.function`; on jax it is compiled with `jax.jit`, the model
weights passed in as arguments (so later training is seen); on torch it
runs eagerly under `torch.no_grad()`.

Output length: a sentence stops at `end_id`, or is forced to end at
`source_length + max_extra_length` tokens (`source_length` counts the
non-padding source tokens), and never runs past `max_length`, which
defaults to `model.max_sequence_length`. For a decoder-only model these
counts include the prompt: `source_length` is the prompt's length, so the
continuation has at most `max_extra_length` tokens, and prompt plus
continuation at most `max_length`.
"""

import contextlib
import weakref

import keras
import numpy as np
from keras import ops

from keras_attention.models import transformer_base
from keras_attention.models.transformer_base import TransformerModelBase
from keras_attention.utils.validation import check_positive_int

# Scores of impossible continuations; finite so that sums stay finite.
NEGATIVE = -1e9
# Rank of an extension that ends, among those that may stay live.
DEAD = -1e30

_COMPILED = weakref.WeakKeyDictionary()


def greedy_search(
    model,
    encoder_token_ids,
    start_id,
    end_id,
    max_extra_length=50,
    max_length=None,
    use_cache=True,
    jit_compile=False,
):
    """Decodes by picking the most probable token at every step.

    Args:
        model: a `keras_attention.models.Transformer` or
            `keras_attention.models.TransformerLanguageModel` (or a model
            with the same decoding methods, see the module docstring).
        encoder_token_ids: int array `(B, S)`, `0` = padding: the sources,
            or the prompts of a decoder-only model.
        start_id: int. First decoder input token.
        end_id: int. Token that ends a sentence.
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

    Returns:
        int32 tensor `(B, L)`: the decoded tokens after `start_id` (after
        the prompt, for a decoder-only model), each row ending with
        `end_id` and then padded with `0`.
    """
    settings = ("greedy", start_id, end_id, max_extra_length, max_length)
    settings += (use_cache,)
    run = _compiled(model, settings, _greedy_fn, jit_compile)
    return run(_check_sources(model, encoder_token_ids, max_length))[0]


def beam_search(
    model,
    encoder_token_ids,
    start_id,
    end_id,
    beam_size=4,
    alpha=0.6,
    max_extra_length=50,
    max_length=None,
    use_cache=True,
    return_scores=False,
    jit_compile=False,
):
    """Beam search with the GNMT length penalty and a finished set.

    Hypotheses are ranked by `log P(Y | X) / lp(Y)` with

    ```
    lp(Y) = ((5 + |Y|) / 6) ** alpha
    ```

    where `|Y|` counts the generated tokens including `end_id` (Wu et al.,
    2016, equation 14, without the coverage penalty); a decoder-only
    model's prompt counts neither in `|Y|` nor in `log P`. The paper uses
    `beam_size=4`, `alpha=0.6`.

    Each sentence keeps `K = beam_size` live hypotheses and a set of the
    `K` best finished ones. At every step the `2K` best one-token
    extensions of the live hypotheses (by `log P`) are taken; at most `K`
    of them end (one per live hypothesis), so the `K` best that do not end
    stay live, and those that end join the finished set, which keeps its
    `K` best by `log P / lp`. The output is the best finished hypothesis.

    Early stop: a sentence stops when no live hypothesis can still beat
    its best finished one. With `alpha >= 0`, `lp` grows with the length;
    log-probabilities are `<= 0`, so a live hypothesis with log-probability
    `s` can only finish as a `Y'` with `log P(Y') <= s` and
    `|Y'| <= n_max`, the sentence's length limit, and

    ```
    log P(Y') / lp(|Y'|) <= log P(Y') / lp(n_max) <= s / lp(n_max)
    ```

    (dividing a number `<= 0` by the larger `lp(n_max)` can only raise
    it). The sentence stops once its best finished score is above
    `max(s) / lp(n_max)` over its live hypotheses; the output is then the
    one running to `n_max` would give. The search ends when every sentence
    has stopped.

    With `beam_size=1` this is greedy search (the most probable token at
    every step, whatever `alpha`), and gives exactly its output.

    The encoder outputs and the cross-attention caches are tiled across
    the beams once; the self-attention cache is reordered with the live
    hypotheses at every step.

    Args:
        model: a `keras_attention.models.Transformer` or
            `keras_attention.models.TransformerLanguageModel` (or a model
            with the same decoding methods, see the module docstring).
        encoder_token_ids: int array `(B, S)`, `0` = padding: the sources,
            or the prompts of a decoder-only model.
        start_id: int. First decoder input token.
        end_id: int. Token that ends a sentence.
        beam_size: int. Live (and finished) hypotheses kept per sentence.
            Defaults to `4`.
        alpha: float. Length penalty exponent; `0` ranks by plain
            log-probability. Defaults to `0.6`.
        max_extra_length: int. Defaults to `50`; see `greedy_search`.
        max_length: int. Defaults to the model's `max_sequence_length`.
        use_cache: bool. Use the decoder caches. Defaults to `True`.
        return_scores: bool. Also return the best hypotheses' normalized
            scores `(B,)`.
        jit_compile: bool. XLA on tensorflow; see `greedy_search`.
            Defaults to `False`.

    Returns:
        int32 tensor `(B, L)` of the best hypotheses (tokens after
        `start_id`, or after the prompt for a decoder-only model, ending
        with `end_id`, padded with `0`); with
        `return_scores=True`, a tuple `(tokens, scores)`.

    References:
        Wu et al., 2016, Google's Neural Machine Translation System,
        https://arxiv.org/abs/1609.08144 (section 7).
    """
    return _run_beam(
        _beam_fn,
        model,
        encoder_token_ids,
        start_id,
        end_id,
        beam_size,
        alpha,
        max_extra_length,
        max_length,
        use_cache,
        return_scores,
        jit_compile,
    )


def legacy_beam_search(
    model,
    encoder_token_ids,
    start_id,
    end_id,
    beam_size=4,
    alpha=0.6,
    max_extra_length=50,
    max_length=None,
    use_cache=True,
    return_scores=False,
    jit_compile=False,
):
    """The beam search of release 0.1, kept to compare with `beam_search`.

    Not exported from `keras_attention.decoding`. The `K` best extensions
    by `log P / lp` fill the beam; a finished hypothesis keeps its slot
    with a fixed score, so once one has finished only `K - 1` keep
    growing, and a sentence ends when all `K` have finished. Same
    arguments and outputs as `beam_search`.
    """
    return _run_beam(
        _legacy_beam_fn,
        model,
        encoder_token_ids,
        start_id,
        end_id,
        beam_size,
        alpha,
        max_extra_length,
        max_length,
        use_cache,
        return_scores,
        jit_compile,
    )


def _run_beam(
    factory,
    model,
    encoder_token_ids,
    start_id,
    end_id,
    beam_size,
    alpha,
    max_extra_length,
    max_length,
    use_cache,
    return_scores,
    jit_compile,
):
    check_positive_int("beam_size", beam_size)
    if not isinstance(alpha, (int, float)) or alpha < 0:
        raise ValueError(
            f"Argument `alpha` must be a number >= 0. Received: alpha={alpha!r}"
        )
    ids = _check_sources(model, encoder_token_ids, max_length)
    common = ("beam", start_id, end_id, max_extra_length, max_length)
    if beam_size == 1 and factory is _beam_fn:
        settings = ("greedy",) + common[1:] + (use_cache,)
        run = _compiled(model, settings, _greedy_fn, jit_compile)
        tokens, log_probs, lengths = run(ids)
        lengths = ops.cast(ops.maximum(lengths, 1), "float32")
        scores = log_probs / ops.power((5.0 + lengths) / 6.0, float(alpha))
    else:
        settings = common + (use_cache, beam_size, float(alpha))
        settings += (factory.__name__,)
        tokens, scores = _compiled(model, settings, factory, jit_compile)(ids)
    return (tokens, scores) if return_scores else tokens


def _check_sources(model, encoder_token_ids, max_length):
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
    if _decoder_only(model):
        room = limit if max_length is None else min(limit, max_length)
        if shape[1] >= room:
            raise ValueError(
                "Prompts must be shorter than max_length and the model's "
                f"max_sequence_length ({room} here), to leave room for a "
                "continuation. Received: encoder_token_ids with shape "
                f"{shape}"
            )
    return ids


def _decoder_only(model):
    """Whether `model` is a decoder-only language model (no `encode`)."""
    return not hasattr(model, "encode")


def _prompt_lengths(encoder_token_ids):
    # (B,) number of non-padding tokens per row.
    return ops.sum(ops.cast(ops.not_equal(encoder_token_ids, 0), "int32"), 1)


def _initial_tokens(encoder_token_ids, start_id, length, repeats):
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


def _continuations(tokens, prompt_lengths, width, length):
    """The `width` tokens after each row's prompt, `(B', W)`, zero-padded.

    `tokens` `(B', L + 1)` is the buffer: start token, prompt, continuation.
    """
    offsets = ops.expand_dims(prompt_lengths + 1, 1) + ops.arange(
        width, dtype="int32"
    )  # (B', W) buffer positions
    picked = ops.take_along_axis(tokens, ops.minimum(offsets, length), axis=1)
    return ops.where(ops.less_equal(offsets, length), picked, 0)


def _output_length(model, source_length, settings):
    _, _, _, extra, max_length = settings[:5]
    cap = model.max_sequence_length if max_length is None else max_length
    return int(min(source_length + extra, cap, model.max_sequence_length))


def _limits(encoder_token_ids, extra, output_length):
    # (B,) number of tokens each sentence may produce, end token included.
    lengths = _prompt_lengths(encoder_token_ids)
    return ops.minimum(lengths + extra, output_length)


def _next_token_log_probs(model, step, tokens, state, use_cache, length):
    """Log-probabilities `(B', V)` of the token after position `step`,
    padding's at `NEGATIVE`."""
    logits, self_cache = _next_token_logits(
        model, step, tokens, state, use_cache, length
    )
    log_probs = ops.log_softmax(logits, axis=-1)
    # Never emit padding.
    vocabulary = ops.arange(ops.shape(log_probs)[-1])
    log_probs = ops.where(ops.equal(vocabulary, 0), NEGATIVE, log_probs)
    return log_probs, self_cache


def _next_token_logits(model, step, tokens, state, use_cache, length):
    """Float32 logits `(B', V)` of the token after position `step`."""
    self_cache, cross_cache, encoder_outputs, encoder_mask, kernel = state
    decoder_only = _decoder_only(model)
    if use_cache:
        # (B', L + 1) -> (B', 1)
        current = ops.expand_dims(ops.take(tokens, step, axis=1), 1)
        # The output projection, computed before the loop, where the
        # model has one.
        extra = {} if kernel is None else {"output_kernel": kernel}
        if decoder_only:
            logits, self_cache = model.decode_step(
                current, step, self_cache, **extra
            )
        else:
            logits, self_cache = model.decode_step(
                current, step, self_cache, cross_cache, encoder_mask, **extra
            )
        logits = logits[:, 0]
    else:
        # The whole decoder on the fixed-size buffer; causal masking makes
        # position `step` independent of the (empty) positions after it.
        if decoder_only:
            logits = model.decode(tokens[:, :length])
        else:
            logits = model.decode(
                tokens[:, :length], encoder_outputs, encoder_mask
            )
        logits = ops.take(logits, step, axis=1)
    return ops.cast(logits, "float32"), self_cache


def _log_normalizers(logits):
    """`log(sum(exp(logits)))` of each row of `(B', V)` logits, `(B', 1)`:
    `logits - _log_normalizers(logits)` are the log-probabilities.

    On tensorflow it is read off the softmax, `max(logits) - log(max(
    softmax(logits)))` (the largest probability is `1 / sum(exp(logits -
    max))`, at least `1 / V`, so its logarithm is accurate): oneDNN's
    softmax kernel takes about 40% of the time of tensorflow's own
    `log_softmax` or `reduce_logsumexp` over `(64, 8000)` on an AVX-512 CPU.
    """
    if keras.backend.backend() != "tensorflow":
        return ops.logsumexp(logits, axis=-1, keepdims=True)
    peak = ops.max(logits, axis=-1, keepdims=True)
    top = ops.max(ops.softmax(logits, axis=-1), axis=-1, keepdims=True)
    return peak - ops.log(top)


def _reorder_cache(cache, order):
    """Gathers the rows `order` `(B',)` of a cache: one tensor or a nested
    tuple of them (the per-layer pairs), each with the batch first."""
    return keras.tree.map_structure(
        lambda part: ops.take(part, order, axis=0), cache
    )


def _initial_state(model, encoder_token_ids, length, repeats, use_cache):
    """What every decoding step reads: `(self_cache, cross_cache,
    encoder_outputs, encoder_mask, output_kernel)`; the first is carried
    through the loop, the others are fixed."""
    kernel = None
    if use_cache and isinstance(model, TransformerModelBase):
        kernel = transformer_base.output_kernel(model)
    if _decoder_only(model):
        rows = ops.shape(encoder_token_ids)[0] * repeats
        if use_cache:
            self_cache = model.initial_cache(rows, length)
        else:
            self_cache = ops.zeros((1,), "float32")  # loop-state placeholder
        return self_cache, None, None, None, kernel
    encoder_outputs, encoder_mask = model.encode(encoder_token_ids)
    if repeats > 1:
        # Tile every sentence's encoder outputs across its beams.
        encoder_outputs = ops.repeat(encoder_outputs, repeats, axis=0)
        encoder_mask = ops.repeat(encoder_mask, repeats, axis=0)
    if use_cache:
        self_cache, cross_cache = model.initial_cache(encoder_outputs, length)
    else:
        # Placeholders so the loop state has the same structure.
        self_cache = cross_cache = ops.zeros((1,), encoder_outputs.dtype)
    return self_cache, cross_cache, encoder_outputs, encoder_mask, kernel


def _greedy_fn(model, settings):
    _, start_id, end_id, extra, _, use_cache = settings
    decoder_only = _decoder_only(model)

    def run(encoder_token_ids):
        batch, source_length = ops.shape(encoder_token_ids)
        length = _output_length(model, source_length, settings)
        limits = _limits(encoder_token_ids, extra, length)
        state = _initial_state(model, encoder_token_ids, length, 1, use_cache)
        if decoder_only:
            prompt_lengths = _prompt_lengths(encoder_token_ids)  # (B,)
            tokens = _initial_tokens(encoder_token_ids, start_id, length, 1)
        else:
            tokens = ops.concatenate(
                [
                    ops.full((batch, 1), start_id, "int32"),
                    ops.zeros((batch, length), "int32"),
                ],
                axis=1,
            )  # (B, L + 1)
        finished = ops.zeros((batch,), "bool")
        scores = ops.zeros((batch,), "float32")  # log P of the output
        lengths = ops.zeros((batch,), "int32")  # its tokens, end included

        def cond(step, tokens, finished, scores, lengths, self_cache):
            return ops.logical_and(
                ops.less(step, length),
                ops.logical_not(ops.all(finished)),
            )

        def body(step, tokens, finished, scores, lengths, self_cache):
            log_probs, self_cache = _next_token_log_probs(
                model,
                step,
                tokens,
                (self_cache,) + state[1:],
                use_cache,
                length,
            )
            chosen = ops.cast(ops.argmax(log_probs, axis=-1), "int32")
            forced = ops.greater_equal(step + 1, limits)
            chosen = ops.where(forced, end_id, chosen)
            if decoder_only:
                # Inside its prompt a row takes the prompt's next token.
                in_prompt = ops.less_equal(step + 1, prompt_lengths)
                prompt_token = ops.take(tokens, step + 1, axis=1)
                chosen = ops.where(in_prompt, prompt_token, chosen)
            counted = ops.logical_not(finished)
            if decoder_only:
                counted = ops.logical_and(counted, ops.logical_not(in_prompt))
            picked = ops.take_along_axis(
                log_probs, ops.expand_dims(chosen, 1), axis=1
            )[:, 0]
            scores = scores + ops.where(counted, picked, 0.0)
            lengths = lengths + ops.cast(counted, "int32")
            chosen = ops.where(finished, 0, chosen)
            tokens = ops.slice_update(
                tokens, [0, step + 1], ops.expand_dims(chosen, 1)
            )
            ends = ops.equal(chosen, end_id)
            if decoder_only:
                ends = ops.logical_and(ends, ops.logical_not(in_prompt))
            finished = ops.logical_or(finished, ends)
            return step + 1, tokens, finished, scores, lengths, self_cache

        step = ops.convert_to_tensor(0, "int32")
        loop = (step, tokens, finished, scores, lengths, state[0])
        _, tokens, _, scores, lengths, _ = ops.while_loop(cond, body, loop)
        if decoder_only:
            width = min(max(extra, 1), length)
            tokens = _continuations(tokens, prompt_lengths, width, length)
        else:
            tokens = tokens[:, 1:]
        return tokens, scores, lengths

    return run


def _beam_start(model, encoder_token_ids, settings):
    """What both beam searches start from: `(batch, L, limits (B, 1),
    state, token buffer (B * K, L + 1), prompt ends (B, 1) or None)`."""
    _, start_id, _, extra, _, use_cache, beams = settings[:7]
    batch, source_length = ops.shape(encoder_token_ids)
    length = _output_length(model, source_length, settings)
    # (B,) -> (B, 1), compared with each sentence's beams.
    limits = ops.expand_dims(_limits(encoder_token_ids, extra, length), 1)
    state = _initial_state(model, encoder_token_ids, length, beams, use_cache)
    if _decoder_only(model):
        prompt_ends = ops.expand_dims(_prompt_lengths(encoder_token_ids), 1)
        tokens = _initial_tokens(encoder_token_ids, start_id, length, beams)
        return batch, length, limits, state, tokens, prompt_ends
    tokens = ops.concatenate(
        [
            ops.full((batch * beams, 1), start_id, "int32"),
            ops.zeros((batch * beams, length), "int32"),
        ],
        axis=1,
    )  # (B * K, L + 1)
    return batch, length, limits, state, tokens, None


def _constrain(log_probs, step, tokens, limits, prompt_ends, end_id, beams):
    """`(B * K, V)` log-probabilities of the next token -> `(B, K, V)`, with
    only `end_id` allowed at the length limit and, inside a decoder-only
    model's prompt, only the prompt's next token, at no cost.

    Returns `(log_probs, generated, in_prompt)`: the tokens the hypotheses
    have after this step (the prompt not counted) and, for a decoder-only
    model, whether each sentence is still in its prompt `(B, 1)`.
    """
    vocabulary_size = ops.shape(log_probs)[-1]
    log_probs = ops.reshape(log_probs, (-1, beams, vocabulary_size))
    vocabulary = ops.arange(vocabulary_size)
    forced = ops.expand_dims(ops.greater_equal(step + 1, limits), -1)
    not_end = ops.not_equal(vocabulary, end_id)
    log_probs = ops.where(ops.logical_and(forced, not_end), NEGATIVE, log_probs)
    if prompt_ends is None:
        return log_probs, step + 1, None
    in_prompt = ops.less_equal(step + 1, prompt_ends)  # (B, 1)
    prompt_token = ops.reshape(
        ops.take(tokens, step + 1, axis=1), (-1, beams, 1)
    )
    only_prompt = ops.where(ops.equal(vocabulary, prompt_token), 0.0, NEGATIVE)
    log_probs = ops.where(
        ops.expand_dims(in_prompt, -1), only_prompt, log_probs
    )
    return log_probs, ops.maximum(step + 1 - prompt_ends, 0), in_prompt


def _beam_fn(model, settings):
    """GNMT beam search: `K` live hypotheses and `K` finished ones."""
    _, start_id, end_id, extra, _, use_cache, beams, alpha, _ = settings
    decoder_only = _decoder_only(model)

    def penalty(lengths):
        return ops.power((5.0 + ops.cast(lengths, "float32")) / 6.0, alpha)

    def run(encoder_token_ids):
        batch, length, limits, state, tokens, prompt_ends = _beam_start(
            model, encoder_token_ids, settings
        )
        if decoder_only:
            longest = limits - prompt_ends  # (B, 1) tokens a reply may have
        else:
            longest = limits
        # The best score a live hypothesis can still reach is bounded with
        # the longest output's penalty (see `beam_search`).
        longest_penalty = penalty(longest)[:, 0]  # (B,)
        # Only the first beam is live at the start, so the first step
        # expands one hypothesis, not K copies of it.
        first = ops.cast(ops.equal(ops.arange(beams), 0), "float32")
        alive_scores = ops.tile(
            ops.expand_dims((1.0 - first) * NEGATIVE, 0), (batch, 1)
        )  # (B, K) log-probabilities
        finished_tokens = ops.zeros((batch, beams, length + 1), "int32")
        finished_scores = ops.full((batch, beams), NEGATIVE, "float32")
        # (B, 1) offsets of each sentence's first beam in the flat batch.
        offsets = ops.expand_dims(ops.arange(batch, dtype="int32") * beams, 1)

        def cond(step, tokens, alive_scores, _, finished_scores, cache):
            bound = ops.max(alive_scores, axis=1) / longest_penalty  # (B,)
            done = ops.greater(finished_scores[:, 0], bound)
            return ops.logical_and(
                ops.less(step, length), ops.logical_not(ops.all(done))
            )

        def body(
            step, tokens, alive_scores, finished_tokens, finished_scores, cache
        ):
            logits, cache = _next_token_logits(
                model, step, tokens, (cache,) + state[1:], use_cache, length
            )  # (B * K, V)
            normalizers = _log_normalizers(logits)  # (B * K, 1)
            vocabulary_size = ops.shape(logits)[-1]
            logits = ops.reshape(logits, (batch, beams, vocabulary_size))
            normalizers = ops.reshape(normalizers, (batch, beams, 1))
            # The 2K best extensions: at most K of them end (one per live
            # hypothesis), so K of them can stay live.
            extensions = _best_extensions(
                logits, normalizers, alive_scores, 2 * beams
            )  # 3 x (B, 2K): scores, hypotheses, tokens

            def only(allowed, values, token):
                # Where `allowed` (B, 1), each hypothesis's one extension
                # is `token` with log-probability `values` (B, K).
                extra = _only_extensions(alive_scores, values, token)
                return tuple(
                    ops.where(allowed, new, old)
                    for new, old in zip(extra, extensions)
                )

            # At the length limit only `end_id`.
            end_log_probs = logits[:, :, end_id] - normalizers[:, :, 0]
            forced = ops.greater_equal(step + 1, limits)  # (B, 1)
            extensions = only(forced, end_log_probs, end_id)
            generated, in_prompt = step + 1, None
            if decoder_only:
                # Inside its prompt, the prompt's next token at no cost.
                in_prompt = ops.less_equal(step + 1, prompt_ends)  # (B, 1)
                prompt_token = ops.reshape(
                    ops.take(tokens, step + 1, axis=1), (batch, beams)
                )
                extensions = only(
                    in_prompt, ops.zeros_like(end_log_probs), prompt_token
                )
                generated = ops.maximum(step + 1 - prompt_ends, 0)
            scores, hypotheses, chosen = extensions  # (B, 2K) each
            origin = offsets + hypotheses  # (B, 2K) flat rows
            ends = ops.equal(chosen, end_id)
            if decoder_only:
                ends = ops.logical_and(ends, ops.logical_not(in_prompt))
            # (B * 2K, L + 1): the extended token buffers.
            extended = ops.take(tokens, ops.reshape(origin, (-1,)), axis=0)
            extended = ops.slice_update(
                extended, [0, step + 1], ops.reshape(chosen, (-1, 1))
            )
            extended = ops.reshape(extended, (batch, 2 * beams, length + 1))

            # Live: the K best extensions that do not end.
            alive_scores, keep = ops.top_k(
                ops.where(ends, DEAD, scores), beams, sorted=True
            )  # (B, K)
            keep = ops.cast(keep, "int32")
            tokens = _take_rows(extended, keep)  # (B * K, L + 1)
            if use_cache:
                # Reorder the flat batch to follow the surviving beams.
                order = ops.take_along_axis(origin, keep, axis=1)  # (B, K)
                cache = _reorder_cache(cache, ops.reshape(order, (-1,)))

            # Finished: the K best of the kept ones and those ending now,
            # ranked by the length-normalised score. Extensions of
            # impossible hypotheses (scores near NEGATIVE) never enter.
            possible = ops.greater(scores, 0.5 * NEGATIVE)
            normalized = scores / penalty(generated)
            normalized = ops.where(
                ops.logical_and(ends, possible), normalized, NEGATIVE
            )
            finished_scores, kept = ops.top_k(
                ops.concatenate([finished_scores, normalized], axis=1),
                beams,
                sorted=True,
            )  # (B, K) out of (B, 3K); the earlier one wins a tie
            finished_tokens = _take_rows(
                ops.concatenate([finished_tokens, extended], axis=1),
                ops.cast(kept, "int32"),
            )
            finished_tokens = ops.reshape(
                finished_tokens, (batch, beams, length + 1)
            )
            return (
                step + 1,
                tokens,
                alive_scores,
                finished_tokens,
                finished_scores,
                cache,
            )

        step = ops.convert_to_tensor(0, "int32")
        loop = (step, tokens, alive_scores, finished_tokens, finished_scores)
        _, _, _, finished_tokens, finished_scores, _ = ops.while_loop(
            cond, body, loop + (state[0],)
        )
        best_tokens = finished_tokens[:, 0]  # (B, L + 1)
        if decoder_only:
            width = min(max(extra, 1), length)
            best_tokens = _continuations(
                best_tokens, prompt_ends[:, 0], width, length
            )
        else:
            best_tokens = best_tokens[:, 1:]
        return best_tokens, finished_scores[:, 0]

    return run


def _best_extensions(logits, normalizers, alive_scores, k):
    """The `k` best one-token extensions of each sentence's live hypotheses.

    An extension of hypothesis `h` by token `v` scores `alive_scores[h] +
    (logits[h, v] - normalizers[h])`, its log-probability; padding (id 0)
    never extends. The result is what one `top_k` over the `(B, K * V)`
    scores gives (padding's at `NEGATIVE`), equal scores ranked by
    hypothesis, then token, as `top_k` ranks them on tensorflow and jax,
    without computing all `K * V` scores.

    The rows are cut into blocks of `width` tokens. A block's best score is
    its hypothesis's score plus its largest logit less the normalizer, and
    the `k` best extensions lie in the `k` blocks whose best scores are
    largest: a block holding one of them whose best is beaten by `k` other
    blocks' would leave `k` better extensions. So one `max` pass over the
    logits, a top-k over `B * K * V / width` block bests and one over the
    `k * width` extensions of the chosen blocks replace the scores and the
    top-k over all of them: 2.1x (torch, one core) to 5.0x (tensorflow)
    faster at beam 4 over 8,000 words (`benchmarks/top_k.py`). The chosen
    blocks are kept in row order, so equal scores rank as in one `top_k`.
    Where the blocks would be too small to pay, the scores are computed and
    ranked in one `top_k`.

    Args:
        logits: float32 `(B, K, V)`, the next token's logits per hypothesis.
        normalizers: `(B, K, 1)`, their log-sum-exp (`_log_normalizers`).
        alive_scores: `(B, K)` log-probabilities of the live hypotheses.
        k: int, at most `K * (V - 1)`.

    Returns:
        `(scores, hypotheses, tokens)`, each `(B, k)`, best first: the
        extensions' log-probabilities, the extended hypotheses (int32 in
        `[0, K)`) and the tokens (int32).
    """
    beams, size = ops.shape(logits)[1:]
    width = _block_width(size, max(k // beams, 1))
    if width is None:
        return _extensions_in_one_top_k(logits, normalizers, alive_scores, k)
    return _extensions_by_blocks(logits, normalizers, alive_scores, k, width)


def _extensions_in_one_top_k(logits, normalizers, alive_scores, k):
    """`_best_extensions` from all `K * V` scores and one `top_k`."""
    batch, _, size = ops.shape(logits)
    totals = ops.expand_dims(alive_scores, -1) + (logits - normalizers)
    padding_id = ops.equal(ops.arange(size), 0)
    totals = ops.where(padding_id, NEGATIVE, totals)
    scores, picked = ops.top_k(ops.reshape(totals, (batch, -1)), k, sorted=True)
    picked = ops.cast(picked, "int32")
    return scores, picked // size, picked % size


def _extensions_by_blocks(logits, normalizers, alive_scores, k, width):
    """`_best_extensions` through the best scores of blocks of `width`
    tokens."""
    batch, beams, size = ops.shape(logits)
    padding = -size % width
    if padding:
        # Below every logit: the padding never reaches the top k.
        low = ops.full((batch, beams, padding), -np.inf, logits.dtype)
        logits = ops.concatenate([logits, low], axis=-1)
    count = (size + padding) // width  # blocks per hypothesis
    blocks = ops.reshape(logits, (batch, beams, count, width))
    maxima = ops.max(blocks, axis=-1)  # (B, K, count)
    # The first block's best without the padding id.
    maxima = ops.concatenate(
        [ops.max(blocks[:, :, :1, 1:], axis=-1), maxima[:, :, 1:]], axis=-1
    )
    block_scores = ops.expand_dims(alive_scores, -1) + (maxima - normalizers)
    _, best = ops.top_k(
        ops.reshape(block_scores, (batch, beams * count)), k, sorted=True
    )
    best = ops.sort(ops.cast(best, "int32"), axis=-1)  # (B, k) row order
    hypotheses = best // count  # (B, k)
    # (B * k, W) -> (B, k, W) logits of the chosen blocks.
    chosen = _take_rows(
        ops.reshape(blocks, (batch, beams * count, width)), best
    )
    chosen = ops.reshape(chosen, (batch, k, width))
    alive = ops.take_along_axis(alive_scores, hypotheses, axis=1)
    normalizer = ops.take_along_axis(normalizers[:, :, 0], hypotheses, axis=1)
    totals = ops.expand_dims(alive, -1) + (
        chosen - ops.expand_dims(normalizer, -1)
    )
    tokens = ops.expand_dims((best % count) * width, -1) + ops.arange(
        width, dtype="int32"
    )  # (B, k, W)
    totals = ops.where(ops.equal(tokens, 0), NEGATIVE, totals)
    scores, within = ops.top_k(
        ops.reshape(totals, (batch, k * width)), k, sorted=True
    )
    within = ops.cast(within, "int32")
    return (
        scores,
        ops.take_along_axis(hypotheses, within // width, axis=1),
        ops.take_along_axis(ops.reshape(tokens, (batch, -1)), within, axis=1),
    )


def _only_extensions(alive_scores, log_probs, token):
    """`_best_extensions`' result where each live hypothesis `h` of `(B,
    K)` has one extension, `token` (an int or `(B, K)` ids) with
    log-probability `log_probs[h]`: the `K` of them best first, then `K`
    impossible ones (`NEGATIVE`, padding) to fill `2K` places."""
    batch, beams = ops.shape(alive_scores)
    totals = ops.concatenate(
        [alive_scores + log_probs, alive_scores + NEGATIVE], axis=1
    )  # (B, 2K)
    scores, picked = ops.top_k(totals, 2 * beams, sorted=True)
    picked = ops.cast(picked, "int32")
    token = ops.cast(ops.broadcast_to(token, (batch, beams)), "int32")
    tokens = ops.concatenate([token, ops.zeros_like(token)], axis=1)
    return (
        scores,
        picked % beams,
        ops.take_along_axis(tokens, picked, axis=1),
    )


def _block_width(size, k):
    """Block width for `_best_extensions` over rows of `size` logits of
    which about `k` are chosen, or `None` where one `top_k` over all the
    scores is as cheap.

    The work is one pass over the row plus a top-k over `size / width`
    block maxima and one over the `k * width` values of the chosen blocks,
    least near `width = sqrt(size / k)`: the divisor of `size` nearest it
    within a factor of 2, else that width on a padded row.
    """
    if not isinstance(size, int) or size < 64 * k:
        return None
    target = (size / k) ** 0.5
    divisors = [
        width
        for width in range(int(target / 2), int(2 * target) + 1)
        if width > 0 and size % width == 0
    ]
    if divisors:
        return min(divisors, key=lambda width: abs(np.log(width / target)))
    return int(round(target))


def _take_rows(values, picked):
    """`values` `(B, M, W)`, `picked` `(B, P)` indices into `M` -> the
    picked rows, flat: `(B * P, W)`."""
    batch, rows, width = ops.shape(values)
    flat = ops.reshape(values, (-1, width))  # (B * M, W)
    offsets = ops.expand_dims(ops.arange(batch, dtype="int32") * rows, 1)
    return ops.take(flat, ops.reshape(offsets + picked, (-1,)), axis=0)


def _legacy_beam_fn(model, settings):
    """The search of release 0.1: finished hypotheses keep their slots."""
    _, start_id, end_id, extra, _, use_cache, beams, alpha, _ = settings
    decoder_only = _decoder_only(model)

    def penalty(lengths):
        return ops.power((5.0 + ops.cast(lengths, "float32")) / 6.0, alpha)

    def run(encoder_token_ids):
        batch, length, limits, state, tokens, prompt_ends = _beam_start(
            model, encoder_token_ids, settings
        )
        # Only the first beam is live at the start, so the first step
        # expands one hypothesis, not K copies of it.
        first = ops.cast(ops.equal(ops.arange(beams), 0), "float32")
        scores = ops.tile(
            ops.expand_dims((1.0 - first) * NEGATIVE, 0), (batch, 1)
        )  # (B, K) log-probabilities
        finished = ops.zeros((batch, beams), "bool")
        lengths = ops.zeros((batch, beams), "int32")
        # (B, K) offsets of each sentence's first beam in the flat batch.
        offsets = ops.expand_dims(ops.arange(batch, dtype="int32") * beams, 1)

        def cond(step, tokens, scores, finished, lengths, self_cache):
            return ops.logical_and(
                ops.less(step, length),
                ops.logical_not(ops.all(finished)),
            )

        def body(step, tokens, scores, finished, lengths, self_cache):
            log_probs, self_cache = _next_token_log_probs(
                model,
                step,
                tokens,
                (self_cache,) + state[1:],
                use_cache,
                length,
            )
            log_probs, generated, in_prompt = _constrain(
                log_probs, step, tokens, limits, prompt_ends, end_id, beams
            )  # (B, K, V)
            vocabulary_size = ops.shape(log_probs)[-1]
            vocabulary = ops.arange(vocabulary_size)
            alive = ops.expand_dims(scores, -1) + log_probs
            # A finished hypothesis continues only with padding, unchanged.
            done = ops.where(
                ops.equal(vocabulary, 0), ops.expand_dims(scores, -1), NEGATIVE
            )
            total = ops.where(ops.expand_dims(finished, -1), done, alive)
            candidate_lengths = ops.where(finished, lengths, generated)
            ranked = total / ops.expand_dims(penalty(candidate_lengths), -1)
            # (B, K * V) -> top K
            _, picked = ops.top_k(
                ops.reshape(ranked, (batch, -1)), beams, sorted=True
            )
            picked = ops.cast(picked, "int32")
            origin = picked // vocabulary_size  # (B, K) beam index
            chosen = picked % vocabulary_size  # (B, K) token
            scores = ops.take_along_axis(
                ops.reshape(total, (batch, -1)), picked, axis=1
            )
            was_finished = ops.take_along_axis(finished, origin, axis=1)
            lengths = ops.where(
                was_finished,
                ops.take_along_axis(lengths, origin, axis=1),
                generated,
            )
            ends = ops.equal(chosen, end_id)
            if decoder_only:
                ends = ops.logical_and(ends, ops.logical_not(in_prompt))
            finished = ops.logical_or(was_finished, ends)
            # Reorder the flat batch to follow the surviving beams.
            order = ops.reshape(offsets + origin, (-1,))  # (B * K,)
            tokens = ops.take(tokens, order, axis=0)
            tokens = ops.slice_update(
                tokens, [0, step + 1], ops.reshape(chosen, (-1, 1))
            )
            if use_cache:
                self_cache = _reorder_cache(self_cache, order)
            return step + 1, tokens, scores, finished, lengths, self_cache

        step = ops.convert_to_tensor(0, "int32")
        _, tokens, scores, finished, lengths, _ = ops.while_loop(
            cond,
            body,
            (step, tokens, scores, finished, lengths, state[0]),
        )
        normalized = scores / penalty(ops.maximum(lengths, 1))  # (B, K)
        best = ops.cast(ops.argmax(normalized, axis=1), "int32")  # (B,)
        rows = ops.arange(batch, dtype="int32") * beams + best
        best_tokens = ops.take(tokens, rows, axis=0)  # (B, L + 1)
        if decoder_only:
            width = min(max(extra, 1), length)
            best_tokens = _continuations(
                best_tokens, prompt_ends[:, 0], width, length
            )
        else:
            best_tokens = best_tokens[:, 1:]
        best_scores = ops.take_along_axis(
            normalized, ops.expand_dims(best, 1), axis=1
        )[:, 0]
        return best_tokens, best_scores

    return run


@contextlib.contextmanager
def fresh_traces(model):
    """Searches on `model` inside the block are traced anew, not reused.

    Compiled searches are kept per model and settings. An exporter that
    traces the search under other op substitutions (or for XLA) needs its
    own traces; the ones from before the block are kept for after it.
    """
    before = _COMPILED.pop(model, None)
    try:
        yield
    finally:
        _COMPILED.pop(model, None)
        if before is not None:
            _COMPILED[model] = before


def _compiled(model, settings, factory, jit_compile=False):
    """The search function for `settings`, compiled for the backend."""
    if not isinstance(jit_compile, bool):
        raise ValueError(
            "Argument `jit_compile` must be a bool. "
            f"Received: jit_compile={jit_compile!r}"
        )
    backend = keras.backend.backend()
    if jit_compile and backend not in ("tensorflow", "jax"):
        raise ValueError(
            "Argument `jit_compile=True` needs the tensorflow or jax "
            f"backend (XLA); the {backend} backend decodes eagerly. "
            f"Received: jit_compile={jit_compile!r}"
        )
    per_model = _COMPILED.setdefault(model, {})
    # jax compiles with XLA either way: one function for both.
    key = (settings, jit_compile and backend == "tensorflow")
    if key in per_model:
        return per_model[key]
    fn = factory(model, settings)
    if backend == "tensorflow":
        import tensorflow as tf

        # `None` (not `False`) leaves tensorflow's own XLA settings alone.
        compiled = tf.function(fn, jit_compile=True if jit_compile else None)
    elif backend == "jax":
        import jax

        def stateless(values, encoder_token_ids):
            mapping = list(zip(model.variables, values))
            with keras.StatelessScope(state_mapping=mapping):
                return fn(encoder_token_ids)

        jitted = jax.jit(stateless)

        def compiled(encoder_token_ids):
            values = [v.value for v in model.variables]
            return jitted(values, encoder_token_ids)

    elif backend == "torch":
        import torch

        def compiled(encoder_token_ids):
            with torch.no_grad():
                return fn(encoder_token_ids)

    else:
        compiled = fn
    per_model[key] = compiled
    return compiled


def strip_special(tokens, end_id):
    """Cuts each row of decoded ids at its first `end_id`.

    Args:
        tokens: int array `(B, L)` from `greedy_search` or `beam_search`.
        end_id: int.

    Returns:
        A list of `B` lists of ints, without `end_id` and padding.
    """
    rows = np.asarray(ops.convert_to_numpy(tokens))
    result = []
    for row in rows:
        ids = []
        for token in row.tolist():
            if token == end_id or token == 0:
                break
            ids.append(token)
        result.append(ids)
    return result
