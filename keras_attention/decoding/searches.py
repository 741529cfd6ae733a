"""Any search from its spec: `search` runs one, `compiled_search` gives
the compiled function an exporter traces into its own graph."""

from keras_attention.decoding.beam import beam_fn
from keras_attention.decoding.beam import beam_search
from keras_attention.decoding.greedy import greedy_fn
from keras_attention.decoding.greedy import greedy_search
from keras_attention.decoding.loop import compile_search
from keras_attention.decoding.sampling import sample
from keras_attention.decoding.sampling import sample_fn
from keras_attention.decoding.specs import Beam
from keras_attention.decoding.specs import Greedy
from keras_attention.decoding.specs import Sampling


def search(model, encoder_token_ids, spec, jit_compile=False):
    """Decodes with the search `spec` names: a `Greedy`, `Sampling` or
    `Beam` with its start and end ids set.

    Returns what `greedy_search`, `sample` or `beam_search` returns for
    the spec (for `Beam(n_best=True)`, the tuple `(tokens, scores)`).
    """
    function = _search_function(spec)
    return function(
        model, encoder_token_ids, spec=spec, jit_compile=jit_compile
    )


def compiled_search(model, spec, jit_compile=False):
    """The search `spec` as the compiled function the searches call, kept
    per model and spec (`decoding.loop`).

    For `Greedy`, `run(encoder_token_ids)` -> `(tokens (B, W), log P
    (B,), lengths (B,))`; for `Sampling`, `run(encoder_token_ids,
    uniforms)` with the uniform numbers `(L, B)` in `[0, 1)` of every step
    and row (`L = spec.output_length(model, S)`), the same outputs; for
    `Beam`, `run(encoder_token_ids)` -> `(tokens, scores)`. The inputs are
    checked by `spec.check_inputs` beforehand, not here.
    """
    _search_function(spec)
    spec.check_ids()
    if isinstance(spec, Beam):
        factory = beam_fn
    elif isinstance(spec, Sampling):
        factory = sample_fn
    else:
        factory = greedy_fn
    return compile_search(model, spec, factory, jit_compile)


def _search_function(spec):
    if isinstance(spec, Beam):
        return beam_search
    if isinstance(spec, Sampling):
        return sample
    if isinstance(spec, Greedy):
        return greedy_search
    raise ValueError(
        "Argument `spec` must be a keras_attention.decoding.Greedy, Sampling "
        f"or Beam. Received: spec={spec!r}"
    )
