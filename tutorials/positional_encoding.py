"""
Title: Positional encoding: sinusoids and learned positions
Author: keras_attention contributors
Date created: 2026/11/29
Last modified: 2026/11/29
Description: The Transformer's sinusoidal encoding, why PE(pos + k) is a linear function of PE(pos), and learned positions.
Accelerator: None
"""

"""
## Introduction

Attention is blind to order: permuting the tokens permutes the outputs. The
Transformer adds a position signal to each embedding (section 3.5):

```
PE(pos, 2i)     = sin(pos / 10000^(2i / d_model))
PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model))
```

The wavelengths form a geometric progression from 2π to 10000 · 2π. The
paper chose sinusoids because, for any fixed offset k, PE(pos + k) is a
linear function of PE(pos): each (sin, cos) pair is rotated by an angle that
depends only on k. This walkthrough plots the encoding and checks that
property numerically, then compares it with learned positions.
"""

import os

# TensorFlow's C++ start-up log (CUDA probes, CPU features) is noise to a
# user; a TF_CPP_MIN_LOG_LEVEL set by the user wins.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse

import matplotlib
import numpy as np
from keras import ops

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from keras_attention import layers

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", default="tutorial_outputs")
args, _ = parser.parse_known_args()
os.makedirs(args.output_dir, exist_ok=True)

"""
## The encoding

`SinusoidalPositionEncoding` returns the encoding for inputs of shape
`(batch, length, width)`; it has no weights and works for any length.
"""

length, width = 100, 64
encoding = layers.SinusoidalPositionEncoding()(ops.zeros((1, length, width)))
encoding = ops.convert_to_numpy(encoding)[0]  # (T, F)

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
image = left.imshow(encoding.T, aspect="auto", cmap="RdBu")
left.set_xlabel("position")
left.set_ylabel("channel")
left.set_title("sinusoidal encoding")
fig.colorbar(image, ax=left)
for channel in (0, 2, 10, 30):
    right.plot(encoding[:, channel], label=f"channel {channel}")
right.set_xlabel("position")
right.legend()
right.set_title("low channels oscillate fastest")
path = os.path.join(args.output_dir, "sinusoidal_encoding.png")
fig.tight_layout()
fig.savefig(path, dpi=100)
print("wrote", path)

"""
## PE(pos + k) is a linear function of PE(pos)

For channel pair (2i, 2i + 1) with frequency w, the angle-sum identities give

```
[sin(w(p + k)), cos(w(p + k))] = [sin(wp), cos(wp)] @ [[cos wk, -sin wk],
                                                       [sin wk,  cos wk]]
```

so one block-diagonal matrix M_k maps every position's encoding to the
encoding k steps later. We build M_k and check it on all positions.
"""

k = 7
frequencies = 1.0 / 10000 ** (np.arange(0, width, 2) / width)
rotation = np.zeros((width, width))
for pair, w in enumerate(frequencies):
    c, s = np.cos(w * k), np.sin(w * k)
    i = 2 * pair
    rotation[i : i + 2, i : i + 2] = [[c, -s], [s, c]]
predicted = encoding[:-k] @ rotation
error = np.max(np.abs(predicted - encoding[k:]))
print(f"max |PE(p) M_k - PE(p + k)| = {error:.2e}")
assert error < 1e-5

"""
The same M_k works for every position, which is what lets attention learn to
attend by relative position.

## Learned positions

The paper also tried learned position embeddings and found nearly identical
results (Table 3, row E). `PositionEmbedding` is a trainable table with one
row per position; unlike sinusoids it cannot go past its length, and says so.
"""

learned = layers.PositionEmbedding(sequence_length=50)
table = ops.convert_to_numpy(learned(ops.zeros((1, 50, width))))[0]
print("learned table:", table.shape)
try:
    learned(ops.zeros((1, 60, width)))
except ValueError as error:
    reason = [line for line in str(error).splitlines() if "Received" in line]
    print("past the end:", reason[0])

"""
`TokenAndPositionEmbedding` combines token embeddings, scaled by
sqrt(d_model) as in the paper, with either kind of position.
"""

embed = layers.TokenAndPositionEmbedding(
    vocabulary_size=1000, embedding_dim=width, position="sinusoidal"
)
tokens = np.array([[12, 7, 99, 3]])
print("embedded:", ops.shape(embed(tokens)))

"""
## Similarity between positions

The dot product between two sinusoidal encodings depends only on their
distance, and falls off with it: a smooth notion of "nearby" for free.
"""

similarity = encoding @ encoding.T
fig, axis = plt.subplots(figsize=(4.5, 4))
image = axis.imshow(similarity, cmap="viridis")
axis.set_xlabel("position")
axis.set_ylabel("position")
axis.set_title("PE(p) · PE(q)")
fig.colorbar(image, ax=axis)
path = os.path.join(args.output_dir, "position_similarity.png")
fig.tight_layout()
fig.savefig(path, dpi=100)
print("wrote", path)
row = similarity[50]
assert np.allclose(row[50 + 3], row[50 - 3], atol=1e-4)
