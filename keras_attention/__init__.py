"""Attention layers for Keras 3 on TensorFlow, JAX and PyTorch.

keras_attention implements the attention mechanisms of three papers as Keras
layers that compose into functional-API models:

- Attention Is All You Need (Vaswani et al., 2017, arXiv:1706.03762).
- DiSAN / ReSAN (Shen et al., 2017 and 2018, arXiv:1709.04696,
  arXiv:1801.10296).
- A Decomposable Attention Model for NLI (Parikh et al., 2016,
  arXiv:1606.01933).

Shape glossary, used in every docstring and shape comment:

    B  batch size
    T  query (target) length
    S  key/value (source) length
    F  features (model width)
    N  attention heads
    H  width of one head
    K  kept (selected) tokens

Masks are boolean with `True` meaning "keep". Per-sequence masks have shape
`(B, T)`; pairwise masks have shape `(B, T, S)` and are called
`attention_mask`.
"""

from keras_attention import callbacks
from keras_attention import checkpoints
from keras_attention import data
from keras_attention import decoding
from keras_attention import layers
from keras_attention import losses
from keras_attention import metrics
from keras_attention import models
from keras_attention import ops
from keras_attention import optimizers
from keras_attention import presets
from keras_attention import saving
from keras_attention import schedules
from keras_attention.version import __version__

__all__ = [
    "callbacks",
    "checkpoints",
    "data",
    "decoding",
    "layers",
    "losses",
    "metrics",
    "models",
    "ops",
    "optimizers",
    "presets",
    "saving",
    "schedules",
    "__version__",
]
