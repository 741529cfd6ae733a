"""Beam search with the GNMT length penalty and a finished set.

Hypotheses are ranked by `log P(Y | X) / lp(Y)` with

```
lp(Y) = ((5 + |Y|) / 6) ** alpha
```

where `|Y|` counts the generated tokens including the end token (Wu et
al., 2016, equation 14, without the coverage penalty); a decoder-only
model's prompt counts neither in `|Y|` nor in `log P`. The paper uses
`beam_size=4`, `alpha=0.6`.

Each sentence keeps `K = beam_size` live hypotheses and a set of the `K`
best finished ones. At every step the `2K` best one-token extensions of
the live hypotheses (by `log P`) are taken; at most `K` of them end (one
per live hypothesis), so the `K` best that do not end stay live, and those
that end join the finished set, which keeps its `K` best by `log P / lp`.

Early stop: a sentence stops when no live hypothesis can still beat its
best finished one. With `alpha >= 0`, `lp` grows with the length;
log-probabilities are `<= 0`, so a live hypothesis with log-probability
`s` can only finish as a `Y'` with `log P(Y') <= s` and `|Y'| <= n_max`,
the sentence's length limit, and

```
log P(Y') / lp(|Y'|) <= log P(Y') / lp(n_max) <= s / lp(n_max)
```

(dividing a number `<= 0` by the larger `lp(n_max)` can only raise it).
The sentence stops once its best finished score is above `max(s) /
lp(n_max)` over its live hypotheses; the output is then the one running to
`n_max` would give. The search ends when every sentence has stopped.

With `beam_size=1` this is greedy search (the most probable token at
every step, whatever `alpha`), and gives exactly its output.

The encoder outputs and the cross-attention caches are tiled across the
beams once; the self-attention cache is reordered with the live
hypotheses at every step.

References:
    Wu et al., 2016, Google's Neural Machine Translation System,
    https://arxiv.org/abs/1609.08144 (section 7).
"""

from typing import Any
from typing import NamedTuple

import numpy as np
from keras import ops

from keras_attention.decoding.greedy import greedy_fn
from keras_attention.decoding.loop import compile_search
from keras_attention.decoding.rules import banned_tokens
from keras_attention.decoding.rules import is_end
from keras_attention.decoding.settings import DEAD
from keras_attention.decoding.settings import NEGATIVE
from keras_attention.decoding.settings import continuations
from keras_attention.decoding.settings import count_prompt_tokens
from keras_attention.decoding.settings import decoder_only
from keras_attention.decoding.settings import initial_tokens
from keras_attention.decoding.settings import length_limits
from keras_attention.decoding.specs import Beam
from keras_attention.decoding.specs import from_arguments
from keras_attention.decoding.state import initial_state
from keras_attention.decoding.state import log_normalizers
from keras_attention.decoding.state import next_token_logits
from keras_attention.decoding.state import prefill as prefill_cache
from keras_attention.decoding.state import reorder_cache
from keras_attention.ops.writes import slice_update


class BeamStart(NamedTuple):
    """What a beam search starts from (`beam_start`)."""

    batch: Any  # B
    length: int  # L
    limits: Any  # (B, 1) tokens each sentence may produce
    inputs: Any  # `decoding.state.StepInputs`, tiled across the beams
    tokens: Any  # (B * K, L + 1) the token buffers
    prompt_ends: Any  # (B, 1) prompt lengths, or None (encoder-decoder)


class BeamContext(NamedTuple):
    """What every step of a beam search reads and no step changes."""

    model: Any
    spec: Any  # `Beam`
    batch: Any  # B
    length: int  # L
    limits: Any  # (B, 1)
    inputs: Any  # `decoding.state.StepInputs`
    prompt_ends: Any  # (B, 1) or None
    offsets: Any  # (B, 1) each sentence's first beam in the flat batch
    longest_penalty: Any  # (B,) the penalty of the longest output


class BeamLoop(NamedTuple):
    """The loop state of a beam search, carried from step to step."""

    step: Any  # int32 scalar
    tokens: Any  # (B * K, L + 1) live hypotheses' buffers
    alive_scores: Any  # (B, K) their log-probabilities
    finished_tokens: Any  # (B, K, L + 1)
    finished_scores: Any  # (B, K) their length-normalised scores
    self_cache: Any  # the self-attention cache of the live hypotheses


def beam_search(
    model,
    encoder_token_ids,
    start_id=None,
    end_id=None,
    beam_size=4,
    alpha=0.6,
    max_extra_length=50,
    max_length=None,
    use_cache=True,
    return_scores=False,
    jit_compile=False,
    prefill=True,
    n_best=False,
    min_length=0,
    no_repeat_ngram_size=0,
    spec=None,
):
    """Beam search with the GNMT length penalty `((5 + |Y|) / 6) ** alpha`,
    `K` live hypotheses, a finished set of `K` and an early stop (see the
    module `keras_attention.decoding.beam`).

    `max_extra_length`, `max_length`, `use_cache`, `jit_compile`,
    `prefill`, `min_length` and `no_repeat_ngram_size` are as for
    `greedy_search`.

    Args:
        model: a `keras_attention.models.Transformer` or
            `keras_attention.models.TransformerLanguageModel` (or a model
            with the same decoding protocol).
        encoder_token_ids: int array `(B, S)`, `0` = padding: the sources,
            or the prompts of a decoder-only model.
        start_id: int. First decoder input token.
        end_id: int, or a list of ints: the tokens that end a sentence
            (the length limit forces the first).
        beam_size: int. Live (and finished) hypotheses kept per sentence.
            Defaults to `4`.
        alpha: float. Length penalty exponent; `0` ranks by plain
            log-probability. Defaults to `0.6`.
        return_scores: bool. Also return the best hypotheses' normalized
            scores `(B,)`.
        n_best: bool. Return all `K` finished hypotheses, best first, with
            their scores: the search then runs until no live hypothesis can
            beat the `K`-th best finished one (the best one is the same).
            Defaults to `False`.
        spec: a `keras_attention.decoding.Beam` holding these options
            instead (`start_id`, `end_id`, `return_scores` and
            `jit_compile` may still come as arguments). Defaults to `None`.

    Returns:
        int32 tensor `(B, L)` of the best hypotheses (tokens after
        `start_id`, or after the prompt for a decoder-only model, ending
        with `end_id`, padded with `0`); with `return_scores=True`, a
        tuple `(tokens, scores)`. With `n_best=True`, always the tuple
        `(tokens (B, K, L), scores (B, K))`, sorted by score.
    """
    spec = from_arguments(
        Beam,
        spec,
        beam_search,
        start_id,
        end_id,
        beam_size=beam_size,
        alpha=alpha,
        max_extra_length=max_extra_length,
        max_length=max_length,
        use_cache=use_cache,
        prefill=prefill,
        n_best=n_best,
        min_length=min_length,
        no_repeat_ngram_size=no_repeat_ngram_size,
    )
    ids = spec.check_inputs(model, encoder_token_ids)
    if spec.beam_size == 1:
        tokens, scores = beam_of_one(model, ids, spec, jit_compile)
    else:
        run = compile_search(model, spec, beam_fn, jit_compile)
        tokens, scores = run(ids)
    return (tokens, scores) if return_scores or spec.n_best else tokens


def beam_of_one(model, ids, spec, jit_compile):
    """A beam of one is greedy search: its `(tokens, scores)`."""
    run = compile_search(model, spec.as_greedy(), greedy_fn, jit_compile)
    tokens, log_probs, lengths = run(ids)
    lengths = ops.cast(ops.maximum(lengths, 1), "float32")
    scores = log_probs / ops.power((5.0 + lengths) / 6.0, spec.alpha)
    if spec.n_best:
        tokens, scores = tokens[:, None], scores[:, None]
    return tokens, scores


def beam_fn(model, spec):
    """The beam search for `spec`: `run(encoder_token_ids)` -> `(best
    tokens, their scores)`."""
    beams = spec.beam_size

    def run(encoder_token_ids):
        start = beam_start(model, encoder_token_ids, spec)
        batch, length, prompt_ends = (
            start.batch,
            start.length,
            start.prompt_ends,
        )
        longest = start.limits
        if prompt_ends is not None:
            longest = start.limits - prompt_ends
        inputs, first_step = prefill_cache(
            model,
            encoder_token_ids,
            start.tokens,
            start.inputs,
            spec.use_cache,
            spec.prefill,
        )
        context = BeamContext(
            model=model,
            spec=spec,
            batch=batch,
            length=length,
            limits=start.limits,
            inputs=inputs,
            prompt_ends=prompt_ends,
            offsets=ops.expand_dims(
                ops.arange(batch, dtype="int32") * beams, 1
            ),
            # The bound on what a live hypothesis can still reach uses the
            # longest output's penalty (see the module docstring).
            longest_penalty=length_penalty(longest, spec.alpha)[:, 0],
        )
        # Only the first beam is live at the start, so the first step
        # expands one hypothesis, not K copies of it.
        first = ops.cast(ops.equal(ops.arange(beams), 0), "float32")
        loop = BeamLoop(
            step=ops.convert_to_tensor(first_step, "int32"),
            tokens=start.tokens,
            alive_scores=ops.tile(
                ops.expand_dims((1.0 - first) * NEGATIVE, 0), (batch, 1)
            ),
            finished_tokens=ops.zeros((batch, beams, length + 1), "int32"),
            finished_scores=ops.full((batch, beams), NEGATIVE, "float32"),
            self_cache=inputs.self_cache,
        )
        loop = BeamLoop(
            *ops.while_loop(
                lambda *loop: beam_continues(context, BeamLoop(*loop)),
                lambda *loop: tuple(beam_step(context, BeamLoop(*loop))),
                tuple(loop),
            )
        )
        finished_tokens = loop.finished_tokens
        finished_scores = loop.finished_scores
        if not spec.n_best:  # the best hypothesis only
            finished_tokens = finished_tokens[:, :1]
            finished_scores = finished_scores[:, :1]
        kept = ops.shape(finished_tokens)[1]
        flat = ops.reshape(finished_tokens, (batch * kept, length + 1))
        if prompt_ends is not None:
            width = min(max(spec.max_extra_length, 1), length)
            ends = ops.repeat(prompt_ends[:, 0], kept, axis=0)
            flat = continuations(flat, ends, width, length)
        else:
            flat = flat[:, 1:]
        tokens = ops.reshape(flat, (batch, kept, -1))
        if not spec.n_best:
            return tokens[:, 0], finished_scores[:, 0]
        return tokens, finished_scores

    return run


def length_penalty(lengths, alpha):
    """GNMT's `((5 + |Y|) / 6) ** alpha`, float32."""
    return ops.power((5.0 + ops.cast(lengths, "float32")) / 6.0, alpha)


def beam_continues(context, loop):
    """Whether some sentence's live hypotheses can still beat its best
    finished one (its `K`-th best for the n-best), within the length."""
    bound = ops.max(loop.alive_scores, axis=1) / context.longest_penalty
    rank = context.spec.beam_size - 1 if context.spec.n_best else 0
    done = ops.greater(loop.finished_scores[:, rank], bound)  # (B,)
    return ops.logical_and(
        ops.less(loop.step, context.length), ops.logical_not(ops.all(done))
    )


def beam_step(context, loop):
    """One step: extend, keep the `K` best live, update the finished set;
    the next `BeamLoop`."""
    batch, beams = context.batch, context.spec.beam_size
    length, alpha = context.length, context.spec.alpha
    step, tokens = loop.step, loop.tokens
    cache, finished_scores = loop.self_cache, loop.finished_scores
    extensions, generated, ends, cache = beam_extensions(
        context, step, tokens, loop.alive_scores, cache
    )
    scores, hypotheses, chosen = extensions  # (B, 2K) each
    origin = context.offsets + hypotheses  # (B, 2K) flat rows
    # (B * 2K, L + 1): the extended token buffers.
    extended = ops.take(tokens, ops.reshape(origin, (-1,)), axis=0)
    extended = slice_update(
        extended, [0, step + 1], ops.reshape(chosen, (-1, 1))
    )
    extended = ops.reshape(extended, (batch, 2 * beams, length + 1))

    # Live: the K best extensions that do not end.
    alive_scores, keep = ops.top_k(
        ops.where(ends, DEAD, scores), beams, sorted=True
    )  # (B, K)
    keep = ops.cast(keep, "int32")
    tokens = take_rows(extended, keep)  # (B * K, L + 1)
    if context.spec.use_cache:
        # Reorder the flat batch to follow the surviving beams.
        order = ops.take_along_axis(origin, keep, axis=1)  # (B, K)
        cache = reorder_cache(cache, ops.reshape(order, (-1,)))

    # Finished: the K best of the kept ones and those ending now, ranked
    # by the length-normalised score. Extensions of impossible hypotheses
    # (scores near NEGATIVE) never enter.
    possible = ops.greater(scores, 0.5 * NEGATIVE)
    normalized = scores / length_penalty(generated, alpha)
    normalized = ops.where(
        ops.logical_and(ends, possible), normalized, NEGATIVE
    )
    finished_scores, kept = ops.top_k(
        ops.concatenate([finished_scores, normalized], axis=1),
        beams,
        sorted=True,
    )  # (B, K) out of (B, 3K); the earlier one wins a tie
    finished_tokens = take_rows(
        ops.concatenate([loop.finished_tokens, extended], axis=1),
        ops.cast(kept, "int32"),
    )
    finished_tokens = ops.reshape(finished_tokens, (batch, beams, length + 1))
    return BeamLoop(
        step + 1,
        tokens,
        alive_scores,
        finished_tokens,
        finished_scores,
        cache,
    )


def beam_extensions(context, step, tokens, alive_scores, cache):
    """The `2K` best extensions `(scores, hypotheses, tokens)`, each `(B,
    2K)`, with the length limit and the prompt forcing their tokens; also
    the generated lengths, which extensions end, and the new cache."""
    batch, beams = context.batch, context.spec.beam_size
    rules = context.spec.rules
    end_id = rules.end_ids[0]
    logits, cache = next_token_logits(
        context.model,
        step,
        tokens,
        context.inputs._replace(self_cache=cache),
        context.spec.use_cache,
        context.length,
    )  # (B * K, V)
    normalizers = log_normalizers(logits)  # (B * K, 1)
    # The model's log-probabilities stay in the scores; banned tokens only
    # leave the choice (the length limit still forces the first end id).
    forced_end = logits[:, end_id]
    made = step if context.prompt_ends is None else step - context.prompt_ends
    made = ops.reshape(
        ops.broadcast_to(ops.maximum(made, 0), (batch, beams)), (-1,)
    )
    banned = banned_tokens(rules, tokens, step, made, ops.shape(logits)[-1])
    if banned is not None:
        logits = ops.where(banned, NEGATIVE, logits)
    vocabulary_size = ops.shape(logits)[-1]
    logits = ops.reshape(logits, (batch, beams, vocabulary_size))
    normalizers = ops.reshape(normalizers, (batch, beams, 1))
    # The 2K best extensions: at most K of them end (one per live
    # hypothesis), so K of them can stay live.
    extensions = best_extensions(logits, normalizers, alive_scores, 2 * beams)

    def only(allowed, values, token):
        # Where `allowed` (B, 1), each hypothesis's one extension is
        # `token` with log-probability `values` (B, K).
        extra = _only_extensions(alive_scores, values, token)
        return tuple(
            ops.where(allowed, new, old) for new, old in zip(extra, extensions)
        )

    # At the length limit only `end_id`.
    end_log_probs = (
        ops.reshape(forced_end, (batch, beams)) - normalizers[:, :, 0]
    )
    forced = ops.greater_equal(step + 1, context.limits)  # (B, 1)
    extensions = only(forced, end_log_probs, end_id)
    generated, in_prompt = step + 1, None
    if context.prompt_ends is not None:
        # Inside its prompt, the prompt's next token at no cost.
        in_prompt = ops.less_equal(step + 1, context.prompt_ends)  # (B, 1)
        prompt_token = ops.reshape(
            ops.take(tokens, step + 1, axis=1), (batch, beams)
        )
        extensions = only(
            in_prompt, ops.zeros_like(end_log_probs), prompt_token
        )
        generated = ops.maximum(step + 1 - context.prompt_ends, 0)
    ends = is_end(extensions[2], rules)
    if in_prompt is not None:
        ends = ops.logical_and(ends, ops.logical_not(in_prompt))
    return extensions, generated, ends, cache


def beam_start(model, encoder_token_ids, spec):
    """What a beam search with `spec` starts from: a `BeamStart`."""
    beams = spec.beam_size
    batch, source_length = ops.shape(encoder_token_ids)
    length = spec.output_length(model, source_length)
    # (B,) -> (B, 1), compared with each sentence's beams.
    limits = ops.expand_dims(
        length_limits(encoder_token_ids, spec.max_extra_length, length), 1
    )
    inputs = initial_state(
        model, encoder_token_ids, length, beams, spec.use_cache
    )
    if decoder_only(model):
        prompt_ends = ops.expand_dims(count_prompt_tokens(encoder_token_ids), 1)
        tokens = initial_tokens(encoder_token_ids, spec.start_id, length, beams)
        return BeamStart(batch, length, limits, inputs, tokens, prompt_ends)
    tokens = ops.concatenate(
        [
            ops.full((batch * beams, 1), spec.start_id, "int32"),
            ops.zeros((batch * beams, length), "int32"),
        ],
        axis=1,
    )  # (B * K, L + 1)
    return BeamStart(batch, length, limits, inputs, tokens, None)


def best_extensions(logits, normalizers, alive_scores, k):
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
        normalizers: `(B, K, 1)`, their log-sum-exp (`log_normalizers`).
        alive_scores: `(B, K)` log-probabilities of the live hypotheses.
        k: int, at most `K * (V - 1)`.

    Returns:
        `(scores, hypotheses, tokens)`, each `(B, k)`, best first: the
        extensions' log-probabilities, the extended hypotheses (int32 in
        `[0, K)`) and the tokens (int32).
    """
    beams, size = ops.shape(logits)[1:]
    width = block_width(size, max(k // beams, 1))
    if width is None:
        return extensions_in_one_top_k(logits, normalizers, alive_scores, k)
    return _extensions_by_blocks(logits, normalizers, alive_scores, k, width)


def extensions_in_one_top_k(logits, normalizers, alive_scores, k):
    """`best_extensions` from all `K * V` scores and one `top_k`."""
    batch, _, size = ops.shape(logits)
    totals = ops.expand_dims(alive_scores, -1) + (logits - normalizers)
    padding_id = ops.equal(ops.arange(size), 0)
    totals = ops.where(padding_id, NEGATIVE, totals)
    scores, picked = ops.top_k(ops.reshape(totals, (batch, -1)), k, sorted=True)
    picked = ops.cast(picked, "int32")
    return scores, picked // size, picked % size


def _extensions_by_blocks(logits, normalizers, alive_scores, k, width):
    """`best_extensions` through the best scores of blocks of `width`
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
    chosen = take_rows(ops.reshape(blocks, (batch, beams * count, width)), best)
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
    """`best_extensions`' result where each live hypothesis `h` of `(B,
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


def block_width(size, k):
    """Block width for `best_extensions` over rows of `size` logits of
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


def take_rows(values, picked):
    """`values` `(B, M, W)`, `picked` `(B, P)` indices into `M` -> the
    picked rows, flat: `(B * P, W)`."""
    batch, rows, width = ops.shape(values)
    flat = ops.reshape(values, (-1, width))  # (B * M, W)
    offsets = ops.expand_dims(ops.arange(batch, dtype="int32") * rows, 1)
    return ops.take(flat, ops.reshape(offsets + picked, (-1,)), axis=0)
