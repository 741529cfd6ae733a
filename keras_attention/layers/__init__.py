"""Keras layers: `from keras_attention import layers`."""

from keras_attention.layers.multi_head_attention import MultiHeadAttention

__all__ = [
    "MultiHeadAttention",
]
