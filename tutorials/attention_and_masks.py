"""
Title: Attention and masks, by hand and with layers
Author: keras_attention contributors
Date created: 2026/11/29
Last modified: 2026/11/29
Description: Scaled dot-product attention step by step, padding and causal masks, multi-head attention, and a heatmap of the weights.
Accelerator: None
"""

"""
## Introduction

Attention turns a query into a weighted average of values, with weights from
how well the query matches each key (Vaswani et al., 2017, equation 1):

```
Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
```

This walkthrough computes that by hand with `keras.ops`, adds the two masks
every sequence model needs (padding and causal), checks that padding never
leaks into real tokens, and draws the attention weights. It runs on
TensorFlow, JAX and PyTorch; set `KERAS_BACKEND` to choose.

Figures are written to the folder given by `--output-dir` (default
`tutorial_outputs/`).
"""

import os

# TensorFlow's C++ start-up log (CUDA probes, CPU features) is noise to a
# user; a TF_CPP_MIN_LOG_LEVEL set by the user wins.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse

import keras
import matplotlib
import numpy as np
from keras import ops

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from keras_attention import layers
from keras_attention import ops as ka_ops

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", default="tutorial_outputs")
args, _ = parser.parse_known_args()
os.makedirs(args.output_dir, exist_ok=True)
keras.utils.set_random_seed(0)

"""
## Attention by hand

A batch of two sentences of 5 tokens with 8 features each. The second
sentence has only 3 real tokens; the last two positions are padding.
"""

batch, length, width = 2, 5, 8
x = keras.random.normal((batch, length, width))
lengths = np.array([5, 3])
padding_mask = np.arange(length)[None, :] < lengths[:, None]  # (B, T)
print("padding mask:\n", padding_mask)

# Self-attention with the identity projection: queries = keys = values = x.
logits = ops.einsum("btf,bsf->bts", x, x) / np.sqrt(width)  # (B, T, S)
weights = ops.softmax(logits, axis=-1)
print("row sums:", ops.convert_to_numpy(ops.sum(weights, -1))[0])

"""
Without a mask, the real tokens of the second sentence attend to the padding.
A padding mask removes the padded keys. `masked_softmax` applies it with
`where`, so masked positions get exactly zero weight in any precision, and a
row with no key left gives zeros instead of NaN.
"""

key_mask = padding_mask[:, None, :]  # (B, 1, S): hide padded keys
masked = ka_ops.masked_softmax(logits, key_mask)
masked_np = ops.convert_to_numpy(masked)
print("weights on padded keys:", masked_np[1, :, 3:].max())
assert np.all(masked_np[1, :, 3:] == 0.0)
np.testing.assert_allclose(masked_np.sum(-1), 1.0, atol=1e-6)

"""
## The causal mask

A decoder may only look at earlier positions. The causal mask is lower
triangular; combine it with the padding mask with a logical AND.
"""

causal = ka_ops.causal_mask(length)  # (T, S)
both = ka_ops.merge_masks(key_mask, causal[None])
causal_weights = ops.convert_to_numpy(ka_ops.masked_softmax(logits, both))
future = np.triu(np.ones((length, length), bool), k=1)
assert np.all(causal_weights[:, future] == 0.0)
print("causal weights, sentence 2:\n", np.round(causal_weights[1], 2))

"""
## Padding does not leak

The decisive test of a padding mask: change what sits in the padded
positions, and nothing at the real positions may change.
"""


def attend(inputs):
    logits = ops.einsum("btf,bsf->bts", inputs, inputs) / np.sqrt(width)
    weights = ka_ops.masked_softmax(logits, key_mask)
    return ops.convert_to_numpy(ops.einsum("bts,bsf->btf", weights, inputs))


garbage = ops.convert_to_numpy(x).copy()
garbage[1, 3:] = 1e3 * np.random.default_rng(0).normal(size=(2, width))
np.testing.assert_allclose(attend(garbage)[1, :3], attend(x)[1, :3], atol=1e-5)
print("padding does not leak: outputs at real tokens unchanged")

"""
## Multi-head attention

`keras_attention.layers.MultiHeadAttention` projects queries, keys and values
into several heads and runs the same computation in each. It takes the same
arguments as `keras.layers.MultiHeadAttention`, and its masks are boolean
`query_mask` / `value_mask` / `attention_mask` arguments, or the Keras masks
of its inputs.
"""

mha = layers.MultiHeadAttention(num_heads=2, key_dim=4)
output, scores = mha(
    x,
    x,
    query_mask=padding_mask,
    value_mask=padding_mask,
    use_causal_mask=True,
    return_attention_scores=True,
)
print("output:", ops.shape(output), "scores:", ops.shape(scores))
scores_np = ops.convert_to_numpy(scores)  # (B, N, T, S)
assert np.all(scores_np[:, :, future] == 0.0)
assert np.all(scores_np[1, :, :, 3:] == 0.0)

"""
## A heatmap of the weights

Each panel shows one head for the second sentence: rows are queries, columns
keys. The upper triangle (future) and the padded columns are exactly zero.
"""

fig, axes = plt.subplots(1, 2, figsize=(7, 3.2))
for head, axis in enumerate(axes):
    image = axis.imshow(scores_np[1, head], vmin=0, vmax=1, cmap="viridis")
    axis.set_title(f"head {head}")
    axis.set_xlabel("key position")
    axis.set_ylabel("query position")
fig.colorbar(image, ax=axes, shrink=0.8)
path = os.path.join(args.output_dir, "attention_weights.png")
fig.savefig(path, dpi=100)
print("wrote", path)

"""
## Summary

- `masked_softmax` gives masked positions exactly zero weight, and fully
  masked rows zeros, never NaN.
- Padding and causal masks combine with a logical AND.
- Changing padded positions never changes outputs at real tokens.
"""
