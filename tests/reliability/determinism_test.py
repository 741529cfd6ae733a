"""With a fixed seed, two training runs give identical weights.

Each model (a small Transformer, the decomposable attention model and
ReSAN with its REINFORCE token sampling) is built and trained for a few
`model.fit` steps with dropout twice in one process, from
`keras.utils.set_random_seed(seed)` each time; the final weights must be
bitwise equal. On torch the runs use `torch.use_deterministic_algorithms`
(deterministic kernels; on CPU it changes no result here, on GPU it is
what makes scatter/index kernels reproducible).

Across processes the same holds on tensorflow and jax:
`interrupted_training_test.py` compares runs made in separate processes.
"""

import contextlib

import keras
import numpy as np
import pytest

from keras_attention import models

STEPS = 4


def data(kind, rng):
    def ids():
        return rng.integers(1, 12, size=(4 * STEPS, 5)).astype("int32")

    if kind == "transformer":
        return {"encoder_token_ids": ids(), "decoder_token_ids": ids()}, ids()
    x = {"premise": ids(), "hypothesis": ids()}
    return x, rng.integers(0, 3, size=(4 * STEPS,)).astype("int32")


def build(kind):
    if kind == "transformer":
        model = models.Transformer(
            vocabulary_size=12,
            num_layers=1,
            hidden_dim=8,
            num_heads=2,
            intermediate_dim=16,
            max_sequence_length=8,
            dropout=0.2,
        )
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    elif kind == "decomposable":
        model = models.decomposable_attention_model(
            vocabulary_size=12, embedding_dim=8, hidden_dim=8, dropout=0.2
        )
        loss = "sparse_categorical_crossentropy"
    else:
        model = models.ReSANClassifier(
            vocabulary_size=12, embedding_dim=8, hidden_dim=8, dropout=0.2
        )
        loss = "sparse_categorical_crossentropy"
    model.compile(keras.optimizers.Adam(1e-2), loss)
    return model


def train_once(kind, seed):
    # No explicit layer seeds: everything derives from the global seed.
    keras.utils.set_random_seed(seed)
    x, y = data(kind, np.random.default_rng(seed))
    model = build(kind)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=True, verbose=0)
    return model.get_weights()


@contextlib.contextmanager
def deterministic_torch():
    if keras.backend.backend() != "torch":
        yield
        return
    import torch

    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)


@pytest.mark.parametrize("kind", ["transformer", "decomposable", "resan"])
def test_same_seed_gives_identical_weights(kind):
    with deterministic_torch():
        first = train_once(kind, seed=21)
        second = train_once(kind, seed=21)
    assert len(first) == len(second)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_another_seed_gives_other_weights():
    # The comparison above can fail: the seed does reach the weights.
    with deterministic_torch():
        first = train_once("decomposable", seed=21)
        other = train_once("decomposable", seed=22)
    assert any(not np.array_equal(a, c) for a, c in zip(first, other))
