"""Tiny Transformer, decomposable attention and ReSAN models with fixed data.

Shared by the tests in this folder. Run as a script, it trains each model
for one step on one device and on two, in a fresh process whose devices
are set up before TensorFlow or JAX start:

    KERAS_BACKEND=tensorflow python tiny_models.py OUT.json
    KERAS_BACKEND=jax XLA_FLAGS=--xla_force_host_platform_device_count=2 \\
        python tiny_models.py OUT.json

tensorflow: two logical CPU devices and `MirroredStrategy(["CPU:0",
"CPU:1"])`. jax: two host devices and `keras.distribution.DataParallel`
(through `keras_attention.training.strategies.strategy_scope("data_parallel")`).
The global batch of `2 * B` examples is the same in both runs, split into
two halves of `B` on two devices. OUT.json gets, per model, the largest
absolute differences between the two runs' weights before and after the
step and how far the step moved the weights.

Randomness: dropout is off. The ReSAN samplers draw uniform noise. On jax
the step sees the global batch, so the noise of `keras.random.uniform`
with the same seed is the same on one device and on two. Under
`tf.distribute` each replica draws its own noise for its half of the
batch, with the same seed, so the two halves would get the same draws,
unlike one device drawing for the whole batch; on tensorflow this script
therefore replaces `keras.random.uniform` by a fixed pattern that depends
on the token position only (`uniform_by_position`), the same for every
example, so that each example sees the same noise in both runs.
"""

import json
import os
import sys

import numpy as np

BATCH = 4  # global batch: two replicas of 2 examples
MODELS = ("transformer", "decomposable", "resan")


def tiny_model(name, seed=0, **resan_arguments):
    """`(model, loss)` for one of `MODELS`, a few hundred weights;
    `resan_arguments` go to the ReSAN classifier."""
    import keras

    from keras_attention import losses
    from keras_attention import models

    keras.utils.set_random_seed(seed)
    if name == "transformer":
        model = models.Transformer(
            vocabulary_size=16,
            num_layers=1,
            hidden_dim=8,
            num_heads=2,
            intermediate_dim=16,
            dropout=0.0,
            max_sequence_length=8,
            seed=seed,
        )
        # Token-averaged over the global batch: the halves of `batch()`
        # hold different numbers of real target tokens.
        return model, losses.LabelSmoothedSparseCategoricalCrossentropy(0.1)
    if name == "decomposable":
        model = models.decomposable_attention_model(
            vocabulary_size=30,
            embedding_dim=6,
            hidden_dim=8,
            num_layers=1,
            dropout=0.0,
            intra_attention=True,
            seed=seed,
        )
    else:
        model = models.ReSANClassifier(
            vocabulary_size=30,
            embedding_dim=6,
            hidden_dim=4,
            dropout=0.0,
            seed=seed,
            **resan_arguments,
        )
    return model, "sparse_categorical_crossentropy"


def batch(name, size=BATCH, seed=0):
    """`(x, y)` NumPy arrays with some padding (id 0).

    For the Transformer, the first half of the batch (the first replica's)
    has 4 real target tokens per example and the second half 2, so the
    token-averaged loss of two replicas equals that of one device only if
    the token counts are summed over the replicas.
    """
    rng = np.random.default_rng(seed)
    if name == "transformer":
        sources = rng.integers(3, 16, (size, 6)).astype("int32")
        sources[::2, 4:] = 0
        targets = rng.integers(3, 16, (size, 5)).astype("int32")
        targets[:, 4:] = 0
        targets[size // 2 :, 2:] = 0
        decoder = np.concatenate(
            [np.full((size, 1), 1, "int32"), targets[:, :-1]], axis=1
        )
        x = {"encoder_token_ids": sources, "decoder_token_ids": decoder}
        return x, targets
    premise = rng.integers(2, 30, (size, 6)).astype("int32")
    premise[::2, 4:] = 0
    hypothesis = rng.integers(2, 30, (size, 5)).astype("int32")
    hypothesis[1::2, 3:] = 0
    labels = rng.integers(0, 3, (size,)).astype("int32")
    return {"premise": premise, "hypothesis": hypothesis}, labels


def uniform_by_position(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Deterministic stand-in for `keras.random.uniform`: one value per
    position of the last axis, the same for every example."""
    from keras import ops

    position = ops.arange(shape[-1], dtype="float32")
    row = ops.mod(position * 0.618 + 0.3, 1.0)  # (T,)
    values = minval + (maxval - minval) * ops.broadcast_to(row, shape)
    return ops.cast(values, dtype or "float32")


def one_step(name, scope, jit_compile, learning_rate=0.5):
    """Builds under `scope`, trains one step, returns weights before/after.

    Also returns the names of the weights.
    """
    import keras

    from keras_attention import models

    with scope:
        model, loss = tiny_model(name)
        optimizer = keras.optimizers.SGD(learning_rate)
        if name == "resan":
            # Its own optimizer per group, as the applications train it:
            # the groups' state is selected back per device under
            # `tf.distribute` (`optimizers.GroupSkippingOptimizer`).
            optimizer = models.resan.with_sampler_optimizer(optimizer)
        model.compile(
            optimizer=optimizer,
            loss=loss,
            jit_compile=jit_compile,
        )
    before = [
        np.array(keras.ops.convert_to_numpy(w)) for w in model.trainable_weights
    ]
    x, y = batch(name)
    model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    after = [
        np.array(keras.ops.convert_to_numpy(w)) for w in model.trainable_weights
    ]
    return before, after, [w.path for w in model.trainable_weights]


def largest_difference(first, second):
    return float(max(np.max(np.abs(a - b)) for a, b in zip(first, second)))


def compare_replicas(backend):
    """Per model: one device vs two devices, as a JSON-ready dict."""
    import contextlib

    import keras

    from keras_attention.training import strategies

    if backend == "tensorflow":
        import tensorflow as tf

        keras.random.uniform = uniform_by_position
        strategy = tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        replicas = strategy.num_replicas_in_sync
        jit_compile = False  # graphs; XLA is checked elsewhere
    else:
        jit_compile = True
    results = {}
    for name in MODELS:
        if backend == "jax":
            keras.distribution.set_distribution(None)
        single = one_step(name, contextlib.nullcontext(), jit_compile)

        def new_scope():
            if backend == "tensorflow":
                return strategy.scope()
            return strategies.strategy_scope("data_parallel")

        double = one_step(name, new_scope(), jit_compile)
        if backend != "tensorflow":
            replicas = strategies.num_replicas()
        names = single[2]
        sampler = [i for i, n in enumerate(names) if "sampler" in n]
        results[name] = {
            "replicas": replicas,
            "initial": largest_difference(single[0], double[0]),
            "updated": largest_difference(single[1], double[1]),
            "moved": largest_difference(single[0], single[1]),
            "sampler_moved": largest_difference(
                [single[0][i] for i in sampler],
                [single[1][i] for i in sampler],
            )
            if sampler
            else None,
        }
        if name == "resan":
            with new_scope():
                results["resan_phases"] = phases_on_two_devices()
    if backend == "jax":
        results["batch_helpers"] = batch_helpers()
    return results


def phases_on_two_devices(steps=3):
    """A ReSAN classifier with one soft-only and one samplers-only step,
    Adam per group, trained on the devices of the current scope: per step,
    `[samplers moved, soft network moved]`, and each group's optimizer
    steps."""
    import keras

    from keras_attention import models

    model, loss = tiny_model("resan", soft_only_steps=1, sampler_only_steps=1)
    model.compile(
        optimizer=models.resan.with_sampler_optimizer(
            keras.optimizers.Adam(0.05)
        ),
        loss=loss,
    )
    x, y = batch("resan")
    moves = []
    for _ in range(steps):
        before = [
            np.array(keras.ops.convert_to_numpy(w))
            for w in model.trainable_weights
        ]
        model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        moved = [
            np.abs(np.array(keras.ops.convert_to_numpy(w)) - start).max()
            for w, start in zip(model.trainable_weights, before)
        ]
        is_sampler = ["sampler" in w.path for w in model.trainable_weights]
        moves.append(
            [
                bool(any(m > 0 for m, s in zip(moved, is_sampler) if s)),
                bool(any(m > 0 for m, s in zip(moved, is_sampler) if not s)),
            ]
        )
    mapping = model.optimizer._optimizer_map
    return {
        "moves": moves,
        "soft_iterations": int(
            keras.ops.convert_to_numpy(mapping.default_optimizer.iterations)
        ),
        "sampler_iterations": int(
            keras.ops.convert_to_numpy(
                mapping[models.resan.SAMPLER_VARIABLES].iterations
            )
        ),
    }


def batch_helpers():
    """What the batch helpers do under DataParallel on two devices."""
    import tensorflow as tf

    from keras_attention.training import strategies

    rows = {"a": np.arange(5), "b": np.arange(5)}
    dataset = tf.data.Dataset.from_tensor_slices((rows, np.arange(5)))
    batches = strategies.divisible_batches(dataset.batch(3))
    try:
        strategies.check_batch_size(3)
        odd_batch_error = None
    except ValueError as error:
        odd_batch_error = str(error)
    return {
        "batch_multiple": strategies.batch_multiple(),
        "trimmed_rows": len(strategies.trim_to_batch_multiple(rows)["a"]),
        "batch_sizes": [int(len(y)) for _, y in batches.as_numpy_iterator()],
        "odd_batch_error": odd_batch_error,
    }


def main(output):
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend == "tensorflow":
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2
        )
    results = compare_replicas(backend)
    with open(output, "w") as f:
        json.dump(results, f, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    main(sys.argv[1])
