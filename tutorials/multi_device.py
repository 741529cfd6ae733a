"""
Title: Training on several devices, with the same numbers as on one
Author: keras_attention contributors
Date created: 2026/11/29
Last modified: 2026/11/29
Description: Data parallelism with tf.distribute.MirroredStrategy and Keras's JAX DataParallel on two CPU devices, checked step by step against one device.
Accelerator: None
"""

"""
## Introduction

Data parallelism splits every global batch of `2B` examples into one slice
of `B` per device. Each device holds a copy of the weights, computes the
gradients of its slice, and the gradients are combined so that every copy
takes the same step. Done right, the step is the one a single device would
take on the whole batch, so the number of devices never changes the
result; only the speed.

Three things commonly break that promise: a loss averaged over each
device's slice but not divided by the number of devices (the summed
gradients are then too large), a statistic taken over one slice instead
of the global batch (a REINFORCE baseline, a token count), and random
numbers drawn per device. This tutorial trains the same small
decomposable attention model on one device and on two, with TensorFlow's
`MirroredStrategy` and with Keras's JAX `DataParallel`, and compares the
losses and weights step by step.

No GPU is needed: TensorFlow can split the CPU into logical devices and
JAX can pretend the host has several devices. Both must be set up before
the framework starts, so this script chooses the backend itself: the main
part runs on TensorFlow, and it starts a second copy of itself for the
JAX part with `KERAS_BACKEND=jax` and
`XLA_FLAGS=--xla_force_host_platform_device_count=2`.

Figures are written to the folder given by `--output-dir` (default
`tutorial_outputs/`).
"""

import os

# TensorFlow's C++ start-up log (CUDA probes, CPU features) is noise to a
# user; a TF_CPP_MIN_LOG_LEVEL set by the user wins.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse
import json
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", default="tutorial_outputs")
parser.add_argument(
    "--part", default="tensorflow", choices=("tensorflow", "jax")
)
args, _ = parser.parse_known_args()
os.makedirs(args.output_dir, exist_ok=True)
if args.part == "jax":
    os.environ["KERAS_BACKEND"] = "jax"
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
else:
    os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

if args.part == "tensorflow":
    # Two logical CPU devices, before TensorFlow runs anything.
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )

import keras
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from keras_attention import models
from keras_attention.training import strategies

"""
## A model and a task

A decomposable attention model (Parikh et al., 2016) with a tiny
vocabulary, and a synthetic task it can learn: the label says whether the
hypothesis repeats the premise's first word (0), repeats its last word
(1), or neither (2). Sentences have different lengths, so padding is
present in every batch. Dropout is off, because each device would draw its
own dropout masks.
"""

STEPS, GLOBAL_BATCH, VOCABULARY = 20, 16, 40


def make_data(count, seed=0):
    rng = np.random.default_rng(seed)
    premise = rng.integers(3, VOCABULARY, (count, 7)).astype("int32")
    hypothesis = rng.integers(3, VOCABULARY, (count, 5)).astype("int32")
    lengths = rng.integers(3, 8, count)
    labels = rng.integers(0, 3, count).astype("int32")
    for i, length in enumerate(lengths):
        premise[i, length:] = 0
        if labels[i] == 0:
            hypothesis[i, 0] = premise[i, 0]
        elif labels[i] == 1:
            hypothesis[i, 0] = premise[i, length - 1]
    return {"premise": premise, "hypothesis": hypothesis}, labels


def build_model():
    keras.utils.set_random_seed(0)  # the same initial weights every time
    model = models.decomposable_attention_model(
        vocabulary_size=VOCABULARY,
        embedding_dim=16,
        hidden_dim=16,
        num_layers=1,
        dropout=0.0,
        trainable_embeddings=True,
        seed=0,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.02),
        loss="sparse_categorical_crossentropy",
    )
    return model


def train(model):
    """`STEPS` steps, cycling over 4 global batches; each step's loss."""
    x, y = make_data(4 * GLOBAL_BATCH)
    losses = []
    for step in range(STEPS):
        start = (step % 4) * GLOBAL_BATCH
        rows = slice(start, start + GLOBAL_BATCH)
        history = model.fit(
            {name: value[rows] for name, value in x.items()},
            y[rows],
            batch_size=GLOBAL_BATCH,
            shuffle=False,
            verbose=0,
        )
        losses.append(history.history["loss"][0])
    weights = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    return np.array(losses), weights


def largest_difference(first, second):
    return float(max(np.max(np.abs(a - b)) for a, b in zip(first, second)))


"""
## The JAX part

On JAX, `keras.distribution.DataParallel` shards every batch over the
devices of a one-axis mesh and replicates the weights. The train step is
compiled once for the global batch and XLA inserts the cross-device sums,
so `mean` over the batch is the global mean without any change to the
model. `keras_attention.training.strategy_scope("data_parallel")` sets
that distribution for the process. (This block runs in the second copy of
the script.)
"""

if args.part == "jax":
    one_losses, one_weights = train(build_model())
    with strategies.strategy_scope("data_parallel"):
        model = build_model()
    two_losses, two_weights = train(model)
    result = {
        "devices": strategies.num_replicas(),
        "one_device": one_losses.tolist(),
        "two_devices": two_losses.tolist(),
        "weight_difference": largest_difference(one_weights, two_weights),
    }
    with open(os.path.join(args.output_dir, "jax_part.json"), "w") as f:
        json.dump(result, f)
    sys.exit(0)

"""
## One device, then two with MirroredStrategy

Variables created under `strategy.scope()` are mirrored on both devices.
`fit` splits each global batch of 16 into two slices of 8. Keras divides
each replica's loss by the number of replicas before the gradients are
summed, so the update equals the one of a single device on all 16
examples. The ReSAN models add a REINFORCE term in `compute_loss`;
`keras_attention` divides that term by the replicas too and takes its
baseline over the global batch (`keras_attention.ops.scale_for_replicas`,
`keras_attention.ops.replica_sum`).
"""

one_losses, one_weights = train(build_model())

strategy = tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
print("replicas in sync:", strategy.num_replicas_in_sync)
with strategy.scope():
    model = build_model()
two_losses, two_weights = train(model)

difference = largest_difference(one_weights, two_weights)
print(
    "loss, first and last 4 steps (1 device):", one_losses[:4], one_losses[-4:]
)
print(
    "loss, first and last 4 steps (2 replicas):",
    two_losses[:4],
    two_losses[-4:],
)
print(f"largest weight difference after {STEPS} steps: {difference:.2e}")
assert one_losses[-4:].mean() < one_losses[:4].mean()
assert difference < 1e-4

"""
The two runs differ only by float rounding: the sum of two half-batch
gradients is not bit-for-bit the gradient of the whole batch.

## The same on JAX

The second copy of this script runs the JAX part and writes its losses.
"""

completed = subprocess.run(
    [
        sys.executable,
        __file__,
        "--part",
        "jax",
        "--output-dir",
        args.output_dir,
    ],
    capture_output=True,
    text=True,
    timeout=600,
)
if completed.returncode != 0:
    raise RuntimeError(completed.stderr[-3000:])
with open(os.path.join(args.output_dir, "jax_part.json")) as f:
    jax_part = json.load(f)
print("JAX devices:", jax_part["devices"])
print(
    f"JAX largest weight difference after {STEPS} steps: "
    f"{jax_part['weight_difference']:.2e}"
)
assert jax_part["devices"] == 2
assert jax_part["weight_difference"] < 1e-4

"""
## Loss curves

Left: the training loss of every step on one device and on two, for both
engines. Within an engine the curves lie on top of each other; the two
engines start from different initial weights (each backend has its own
random generator), so their curves differ. Right: how far apart the
one-device and two-device losses are at each step (equal losses are drawn
at 1e-10).
"""

steps = np.arange(1, STEPS + 1)
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
left.plot(steps, one_losses, "o-", label="TensorFlow, 1 device")
left.plot(steps, two_losses, "x--", label="TensorFlow, 2 replicas")
left.plot(steps, jax_part["one_device"], "s-", alpha=0.6, label="JAX, 1 device")
left.plot(steps, jax_part["two_devices"], "+--", label="JAX, 2 devices")
left.set_xlabel("step")
left.set_ylabel("training loss")
left.legend(fontsize=8)
gaps = {
    "TensorFlow": np.abs(one_losses - two_losses),
    "JAX": np.abs(np.subtract(jax_part["one_device"], jax_part["two_devices"])),
}
for name, gap in gaps.items():
    right.semilogy(steps, np.maximum(gap, 1e-10), "o-", label=name)
right.set_xlabel("step")
right.set_ylabel("|loss(1 device) - loss(2 devices)|")
right.legend(fontsize=8)
fig.tight_layout()
path = os.path.join(args.output_dir, "replica_losses.png")
fig.savefig(path, dpi=100)
print("wrote", path)

"""
## Summary

- With data parallelism done right, two devices take the same steps as
  one: here the weights agree within float rounding after 20 steps, on
  TensorFlow (`MirroredStrategy`) and on JAX (`DataParallel`).
- Loss terms written by hand must be divided by the number of replicas and
  batch statistics taken over the global batch under `tf.distribute`; on
  JAX the compiled step sees the global batch.
- The applications take `--strategy`, `--mixed-precision` and
  `--jit-compile`; docs/distributed_training.md has the commands for
  several GPUs and several machines.
"""
