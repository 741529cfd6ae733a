"""Decoding for encoder-decoder models: greedy and beam search."""

from keras_attention.decoding.search import beam_search
from keras_attention.decoding.search import greedy_search
from keras_attention.decoding.search import strip_special

__all__ = ["beam_search", "greedy_search", "strip_special"]
