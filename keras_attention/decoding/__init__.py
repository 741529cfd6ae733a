"""Decoding for encoder-decoder models and decoder-only language models.

- Each search is a named value (`decoding.specs`): `Greedy`, `Sampling`
  (temperature, top-k, top-p, seeded) and `Beam`, frozen and hashable;
- `greedy_search`, `sample` and `beam_search` run them, from a spec or
  from keyword arguments (`decoding.greedy`, `decoding.sampling`,
  `decoding.beam`), and `search` runs whichever a spec names;
- `translate`: sentences in, translations out, with a SentencePiece
  tokenizer (`decoding.translate`);
- `stream`: the tokens of every step as they are produced (eager);
- `strip_special`: decoded ids cut at the end token;
- `compiled_search`, `fresh_traces`, `decoder_only`: what an exporter
  needs to trace a search into its own graph.

Every search runs on the models' public protocol, `initial_cache` and
`decode_step` (`decoding.state`), prefills a decoder-only model's prompts
in one call, follows `decoding.rules` (several end ids, `min_length`,
`no_repeat_ngram_size`), and loops with `keras.ops.while_loop`, compiled
on tensorflow and jax (`decoding.loop`).
"""

from keras_attention.decoding.beam import beam_search
from keras_attention.decoding.greedy import greedy_search
from keras_attention.decoding.loop import fresh_traces
from keras_attention.decoding.sampling import sample
from keras_attention.decoding.searches import compiled_search
from keras_attention.decoding.searches import search
from keras_attention.decoding.settings import decoder_only
from keras_attention.decoding.settings import strip_special
from keras_attention.decoding.specs import Beam
from keras_attention.decoding.specs import Greedy
from keras_attention.decoding.specs import Sampling
from keras_attention.decoding.streaming import stream
from keras_attention.decoding.translate import translate

__all__ = [
    "Beam",
    "Greedy",
    "Sampling",
    "beam_search",
    "compiled_search",
    "decoder_only",
    "fresh_traces",
    "greedy_search",
    "sample",
    "search",
    "stream",
    "strip_special",
    "translate",
]
