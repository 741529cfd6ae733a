"""Sampling: temperature, top-k and top-p (nucleus), combinable and seeded.

At every step the next token's log-probabilities are divided by the
temperature, cut to the `top_k` most probable tokens and then to the
smallest set whose probability reaches `top_p` (Holtzman et al., 2019),
renormalised, and one token is drawn:

```
logits = log_probs / temperature
logits = where(logits >= k-th largest logit, logits, -inf)      # top_k
probs  = softmax(logits)
probs  = where(probs >= p-threshold, probs, 0) / their sum      # top_p
token  = first v with cumsum(probs)[v] > u * sum(probs)         # u ~ U[0, 1)
```

where the `p`-threshold is the smallest probability of the most probable
tokens whose mass before it is below `top_p` (at least one token stays).
The uniform numbers `u`, one per row and step, are drawn before the loop
with `keras.random.uniform(seed=seed)`, so a seed gives the same tokens at
every call on a backend, whether the loop runs compiled (tensorflow, jax)
or eagerly (torch). `temperature=0` is greedy search. Padding (id 0) is
never drawn. Tokens tied with the `k`-th largest logit all stay.
"""

import keras
from keras import ops

from keras_attention.decoding.greedy import argmax_chooser
from keras_attention.decoding.greedy import token_loop
from keras_attention.decoding.loop import compile_search
from keras_attention.decoding.specs import Sampling
from keras_attention.decoding.specs import from_arguments


def sample(
    model,
    encoder_token_ids,
    start_id=None,
    end_id=None,
    temperature=1.0,
    top_k=None,
    top_p=None,
    seed=None,
    max_extra_length=50,
    max_length=None,
    use_cache=True,
    jit_compile=False,
    prefill=True,
    min_length=0,
    no_repeat_ngram_size=0,
    spec=None,
):
    """Decodes by drawing every token from the model's distribution.

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
        temperature, top_k, top_p, seed: the sampling; see
            `keras_attention.decoding.Sampling` (`1.0`, all tokens, all
            tokens, Keras's global seed by default).
        spec: a `keras_attention.decoding.Sampling` holding these options
            instead (`start_id` and `end_id` may still come as arguments).
            Defaults to `None`.

    Returns:
        int32 tensor `(B, L)`, as `greedy_search` returns.

    Example:

    ```python
    continuations = keras_attention.decoding.sample(
        model, prompts, start_id=1, end_id=2, top_k=40, top_p=0.9,
        temperature=0.8, seed=7,
    )
    spec = keras_attention.decoding.Sampling(top_k=40, seed=7)  # a value
    same = keras_attention.decoding.sample(model, prompts, 1, 2, spec=spec)
    ```

    References:
        - [Fan et al., 2018](https://arxiv.org/abs/1805.04833) (top-k).
        - [Holtzman et al., 2019](https://arxiv.org/abs/1904.09751)
          (top-p).
    """
    spec = from_arguments(
        Sampling,
        spec,
        sample,
        start_id,
        end_id,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        seed=seed,
        max_extra_length=max_extra_length,
        max_length=max_length,
        use_cache=use_cache,
        prefill=prefill,
        min_length=min_length,
        no_repeat_ngram_size=no_repeat_ngram_size,
    )
    ids = spec.check_inputs(model, encoder_token_ids)
    uniforms = sampling_uniforms(model, spec, ids)
    run = compile_search(model, spec, sample_fn, jit_compile)
    return run(ids, uniforms)[0]


def sampling_uniforms(model, spec, encoder_token_ids):
    """The uniform numbers `(L, B)` a sampled search draws with, one per
    step and row, from `spec.seed` (`keras.random.uniform`)."""
    batch, source_length = ops.shape(encoder_token_ids)
    length = spec.output_length(model, source_length)
    return keras.random.uniform((length, batch), seed=spec.seed)


def sample_fn(model, spec):
    """The sampler for `spec`: `run(encoder_token_ids, uniforms (L, B))`
    -> `(tokens, log P, lengths)`."""

    def run(encoder_token_ids, uniforms):
        choose = sampling_chooser(spec, uniforms)
        return token_loop(model, spec, encoder_token_ids, choose)

    return run


def sampling_chooser(spec, uniforms):
    """`choose(log_probs, step)` drawing with `uniforms[step]` after the
    temperature, top-k and top-p of `spec`; argmax at temperature 0."""
    if spec.temperature == 0.0:
        return argmax_chooser

    def choose(log_probs, step):
        probs = sampling_probabilities(
            log_probs, spec.temperature, spec.top_k, spec.top_p
        )
        return draw(probs, ops.take(uniforms, step, axis=0))

    return choose


def sampling_probabilities(log_probs, temperature=1.0, top_k=None, top_p=None):
    """The distribution a token is drawn from: float32 `(B, V)` log-
    probabilities -> probabilities `(B, V)` after the temperature, top-k
    and top-p, renormalised (the module docstring's formulas)."""
    logits = ops.cast(log_probs, "float32") / temperature
    if top_k is not None and top_k < ops.shape(logits)[-1]:
        # The k-th largest logit as the minimum of the top k, not their
        # last column: inside jax's compiled loop on CPU, slicing top_k's
        # output made XLA sort the whole vocabulary (about 25 ms a step at
        # 8 x 8,000 against 0.2 ms; benchmarks/keras_hub_generate.py).
        kth = ops.min(ops.top_k(logits, top_k)[0], axis=-1, keepdims=True)
        logits = ops.where(
            ops.greater_equal(logits, kth), logits, -float("inf")
        )
    probs = ops.softmax(logits, axis=-1)
    if top_p is not None and top_p < 1.0:
        if keras.backend.backend() == "torch":
            # Eager torch sorts fast; 31 masked sums cost more there.
            threshold = nucleus_threshold_by_sorting(probs, top_p)
        else:
            threshold = nucleus_threshold(probs, top_p)
        probs = ops.where(ops.greater_equal(probs, threshold), probs, 0.0)
        probs = probs / ops.sum(probs, axis=-1, keepdims=True)
    return probs


def nucleus_threshold(probs, top_p):
    """The smallest probability of the nucleus: per row of `probs` `(B,
    V)`, the largest probability `t` whose tokens with `p >= t` hold mass
    `>= top_p` (at least the most probable token); `(B, 1)`.

    This is the probability at which sorting and summing in descending
    order first reaches `top_p`, found without a sort (a sort of the
    vocabulary at every step made top-p sampling 4-14 times slower than
    greedy search; `benchmarks/keras_hub_generate.py`). Non-negative
    float32 values order as their bit patterns read as int32, so a binary
    search over the 31 bits finds it exactly: 31 masked sums of `(B, V)`.
    """
    bits = ops.view(ops.cast(probs, "float32"), "int32")
    low = ops.zeros_like(bits[:, :1])  # mass(p >= 0) = 1 >= top_p
    high = ops.max(bits, axis=-1, keepdims=True) + 1  # mass 0 < top_p
    for _ in range(31):
        middle = low + (high - low) // 2
        mass = ops.sum(
            ops.where(ops.greater_equal(bits, middle), probs, 0.0),
            axis=-1,
            keepdims=True,
        )
        enough = ops.greater_equal(mass, top_p)
        low = ops.where(enough, middle, low)
        high = ops.where(enough, high, middle)
    # The most probable token always stays, even where rounding leaves
    # the whole row's mass below `top_p`.
    top = ops.max(bits, axis=-1, keepdims=True)
    return ops.view(ops.minimum(low, top), "float32")


def nucleus_threshold_by_sorting(probs, top_p):
    """`nucleus_threshold` by sorting each row: the smallest probability
    of the most probable tokens whose mass before it is below `top_p`."""
    ordered = ops.flip(ops.sort(probs, axis=-1), axis=-1)  # descending
    before = ops.cumsum(ordered, axis=-1) - ordered  # mass before each
    kept = ops.less(before, top_p)  # the first is always kept
    return ops.min(
        ops.where(kept, ordered, float("inf")), axis=-1, keepdims=True
    )


def draw(probs, uniforms):
    """One token per row of `probs` `(B, V)` by inverting the cumulative
    distribution at `uniforms` `(B,)` in `[0, 1)`; int32 `(B,)`. A token of
    probability 0 is never drawn."""
    cumulative = ops.cumsum(probs, axis=-1)  # (B, V)
    target = ops.expand_dims(uniforms, 1) * cumulative[:, -1:]
    token = ops.sum(ops.cast(ops.less_equal(cumulative, target), "int32"), 1)
    return ops.minimum(token, ops.shape(probs)[-1] - 1)
