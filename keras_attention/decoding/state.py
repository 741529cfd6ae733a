"""The model side of a search: caches, encoder outputs and the next
token's logits at every step.

The searches take a model with one of two decoding interfaces:

- encoder-decoder, as `keras_attention.models.Transformer`: `encode(ids)`,
  `initial_cache(encoder_outputs, max_length)`, `decode_step(ids, index,
  self_attention_cache, cross_attention_cache, encoder_padding_mask)`,
  `decode(ids, encoder_outputs, encoder_padding_mask)`;
- decoder-only, as `keras_attention.models.TransformerLanguageModel` (no
  `encode` method): `initial_cache(batch_size, max_length)`,
  `decode_step(ids, index, self_attention_cache)`, `decode(ids)`.

Both also have `max_sequence_length`. The models of this package keep
their caches as one heads-first `(keys, values)` pair per layer
(`keras_attention.ops.key_value_cache`) and have an `output_kernel()`
method: the output projection, computed once before the loop and passed
to every step (`decode_step(..., output_kernel=...)`). A model without
that method decodes with its own projection.
"""

from typing import Any
from typing import NamedTuple

import keras
from keras import ops

from keras_attention.decoding.settings import NEGATIVE
from keras_attention.decoding.settings import count_prompt_tokens
from keras_attention.decoding.settings import decoder_only


class StepInputs(NamedTuple):
    """What every decoding step reads. `self_cache` is carried through the
    loop (and replaced at every step); the others are fixed. A decoder-only
    model has no `cross_cache`, `encoder_outputs` or `encoder_mask`
    (`None`); a model without `output_kernel()`, or a search without the
    cache, has no `output_kernel`."""

    self_cache: Any
    cross_cache: Any
    encoder_outputs: Any
    encoder_mask: Any
    output_kernel: Any


def initial_state(model, encoder_token_ids, length, repeats, use_cache):
    """The `StepInputs` of a search over `encoder_token_ids` `(B, S)` with
    `repeats` rows per sentence (the beams) and a buffer of `length`."""
    kernel = None
    if use_cache and hasattr(model, "output_kernel"):
        kernel = model.output_kernel()
    if decoder_only(model):
        rows = ops.shape(encoder_token_ids)[0] * repeats
        if use_cache:
            self_cache = model.initial_cache(rows, length)
        else:
            self_cache = ops.zeros((1,), "float32")  # loop-state placeholder
        return StepInputs(self_cache, None, None, None, kernel)
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
    return StepInputs(
        self_cache, cross_cache, encoder_outputs, encoder_mask, kernel
    )


def prefill(model, encoder_token_ids, tokens, state, use_cache, enabled):
    """Feeds a decoder-only model's prompts in one call that fills the
    cache: `(StepInputs, first step)`.

    The start token and the prompts but their last column, the buffer's
    positions `0 .. W - 1` (`W` the prompts' padded width), go through one
    `decode_step` at index 0; the loop then starts at the shortest prompt's
    length `m`, where every row still reads its prompt, instead of at 0.
    A row with a shorter prompt wrote padding into slots `m .. W - 1` of
    its cache; the loop writes slot `s` at step `s` before any query reads
    it (queries see slots up to their own), so those never count. Without
    a cache, for an encoder-decoder model or with `enabled=False`, the loop
    starts at 0 and feeds every prompt token on its own step: the same
    outputs (`tests/decoding/prefill_test.py`).
    """
    zero = ops.convert_to_tensor(0, "int32")
    if not (enabled and use_cache and decoder_only(model)):
        return state, zero
    width = ops.shape(encoder_token_ids)[1]
    kernel = state.output_kernel
    # The prompt's logits are not used: with a projection (the models of
    # this package), one column of it, not `(B, W, V)` logits.
    extra = {} if kernel is None else {"output_kernel": kernel[:, :1]}
    _, self_cache = model.decode_step(
        tokens[:, :width], 0, state.self_cache, **extra
    )
    first = ops.cast(ops.min(count_prompt_tokens(encoder_token_ids)), "int32")
    return state._replace(self_cache=self_cache), first


def next_token_log_probs(model, step, tokens, state, use_cache, length):
    """Log-probabilities `(B', V)` of the token after position `step`,
    padding's at `NEGATIVE`, and the new self-attention cache; `state` is
    the `StepInputs`."""
    logits, self_cache = next_token_logits(
        model, step, tokens, state, use_cache, length
    )
    log_probs = ops.log_softmax(logits, axis=-1)
    # Never emit padding.
    vocabulary = ops.arange(ops.shape(log_probs)[-1])
    log_probs = ops.where(ops.equal(vocabulary, 0), NEGATIVE, log_probs)
    return log_probs, self_cache


def next_token_logits(model, step, tokens, state, use_cache, length):
    """Float32 logits `(B', V)` of the token after position `step`, and
    the new self-attention cache; `state` is the `StepInputs`."""
    self_cache, kernel = state.self_cache, state.output_kernel
    is_decoder_only = decoder_only(model)
    if use_cache:
        # (B', L + 1) -> (B', 1)
        current = ops.expand_dims(ops.take(tokens, step, axis=1), 1)
        # The output projection, computed before the loop, where the
        # model has one.
        extra = {} if kernel is None else {"output_kernel": kernel}
        if is_decoder_only:
            logits, self_cache = model.decode_step(
                current, step, self_cache, **extra
            )
        else:
            logits, self_cache = model.decode_step(
                current,
                step,
                self_cache,
                state.cross_cache,
                state.encoder_mask,
                **extra,
            )
        logits = logits[:, 0]
    else:
        # The whole decoder on the fixed-size buffer; causal masking makes
        # position `step` independent of the (empty) positions after it.
        if is_decoder_only:
            logits = model.decode(tokens[:, :length])
        else:
            logits = model.decode(
                tokens[:, :length], state.encoder_outputs, state.encoder_mask
            )
        logits = ops.take(logits, step, axis=1)
    return ops.cast(logits, "float32"), self_cache


def log_normalizers(logits):
    """`log(sum(exp(logits)))` of each row of `(B', V)` logits, `(B', 1)`:
    `logits - log_normalizers(logits)` are the log-probabilities.

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


def reorder_cache(cache, order):
    """Gathers the rows `order` `(B',)` of a cache: one tensor or a nested
    tuple of them (the per-layer pairs), each with the batch first."""
    return keras.tree.map_structure(
        lambda part: ops.take(part, order, axis=0), cache
    )
