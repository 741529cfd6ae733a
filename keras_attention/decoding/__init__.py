"""Decoding for encoder-decoder models and decoder-only language models.

- `greedy_search`, `sample` (temperature, top-k, top-p, seeded) and
  `beam_search` (`decoding.greedy`, `decoding.sampling`, `decoding.beam`);
- `translate`: sentences in, translations out, with a SentencePiece
  tokenizer (`decoding.translate`);
- `stream`: the tokens of every step as they are produced (eager);
- `strip_special`: decoded ids cut at the end token.

Every search runs on the models' public protocol, `initial_cache` and
`decode_step` (`decoding.state`), prefills a decoder-only model's prompts
in one call, follows `decoding.rules` (several end ids, `min_length`,
`no_repeat_ngram_size`), and loops with `keras.ops.while_loop`, compiled
on tensorflow and jax (`decoding.loop`).
"""

from keras_attention.decoding.beam import beam_search
from keras_attention.decoding.greedy import greedy_search
from keras_attention.decoding.sampling import sample
from keras_attention.decoding.settings import strip_special
from keras_attention.decoding.streaming import stream
from keras_attention.decoding.translate import translate

__all__ = [
    "beam_search",
    "greedy_search",
    "sample",
    "stream",
    "strip_special",
    "translate",
]
