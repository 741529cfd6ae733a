"""The beam search of release 0.1, kept here (out of the library) to compare
with `keras_attention.decoding.beam_search` (`search_comparison.py`,
`transformer_decoding.py`, and the tests of the library's search).

The `K` best extensions by `log P / lp` fill the beam; a finished
hypothesis keeps its slot with a fixed score, so once one has finished
only `K - 1` keep growing, and a sentence ends when all `K` have finished.
Same arguments and outputs as `beam_search`. It runs on the library's
search internals (`keras_attention.decoding.specs`, `.settings`, `.state`,
`.loop`, `.beam`).
"""

from keras import ops

from keras_attention.decoding.beam import beam_start
from keras_attention.decoding.loop import compile_search
from keras_attention.decoding.settings import NEGATIVE
from keras_attention.decoding.settings import continuations
from keras_attention.decoding.settings import decoder_only
from keras_attention.decoding.specs import Beam
from keras_attention.decoding.state import next_token_log_probs
from keras_attention.decoding.state import reorder_cache


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
    """The 0.1 beam search; arguments and outputs of `beam_search`."""
    spec = Beam(
        start_id=start_id,
        end_id=end_id,
        beam_size=beam_size,
        alpha=alpha,
        max_extra_length=max_extra_length,
        max_length=max_length,
        use_cache=use_cache,
    )
    ids = spec.check_inputs(model, encoder_token_ids)
    # Kept apart from the library's beam search of the same spec.
    run = compile_search(
        model,
        ("legacy", spec),
        lambda model, key: legacy_beam_fn(model, key[1]),
        jit_compile,
    )
    tokens, scores = run(ids)
    return (tokens, scores) if return_scores else tokens


def constrain(log_probs, step, tokens, limits, prompt_ends, end_id, beams):
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


def legacy_beam_fn(model, spec):
    """The search of release 0.1: finished hypotheses keep their slots."""
    end_id, extra, use_cache = (
        spec.end_id,
        spec.max_extra_length,
        spec.use_cache,
    )
    beams, alpha = spec.beam_size, spec.alpha
    is_decoder_only = decoder_only(model)

    def penalty(lengths):
        return ops.power((5.0 + ops.cast(lengths, "float32")) / 6.0, alpha)

    def run(encoder_token_ids):
        batch, length, limits, state, tokens, prompt_ends = beam_start(
            model, encoder_token_ids, spec
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
            log_probs, self_cache = next_token_log_probs(
                model,
                step,
                tokens,
                state._replace(self_cache=self_cache),
                use_cache,
                length,
            )
            log_probs, generated, in_prompt = constrain(
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
            if is_decoder_only:
                ends = ops.logical_and(ends, ops.logical_not(in_prompt))
            finished = ops.logical_or(was_finished, ends)
            # Reorder the flat batch to follow the surviving beams.
            order = ops.reshape(offsets + origin, (-1,))  # (B * K,)
            tokens = ops.take(tokens, order, axis=0)
            tokens = ops.slice_update(
                tokens, [0, step + 1], ops.reshape(chosen, (-1, 1))
            )
            if use_cache:
                self_cache = reorder_cache(self_cache, order)
            return step + 1, tokens, scores, finished, lengths, self_cache

        step = ops.convert_to_tensor(0, "int32")
        _, tokens, scores, finished, lengths, _ = ops.while_loop(
            cond,
            body,
            (step, tokens, scores, finished, lengths, state.self_cache),
        )
        normalized = scores / penalty(ops.maximum(lengths, 1))  # (B, K)
        best = ops.cast(ops.argmax(normalized, axis=1), "int32")  # (B,)
        rows = ops.arange(batch, dtype="int32") * beams + best
        best_tokens = ops.take(tokens, rows, axis=0)  # (B, L + 1)
        if is_decoder_only:
            width = min(max(extra, 1), length)
            best_tokens = continuations(
                best_tokens, prompt_ends[:, 0], width, length
            )
        else:
            best_tokens = best_tokens[:, 1:]
        best_scores = ops.take_along_axis(
            normalized, ops.expand_dims(best, 1), axis=1
        )[:, 0]
        return best_tokens, best_scores

    return run
