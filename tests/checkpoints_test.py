import os

import keras
import numpy as np
import pytest

from keras_attention.checkpoints import average_checkpoints
from keras_attention.checkpoints import last_checkpoints


def small_model():
    inputs = keras.Input((3,))
    return keras.Model(inputs, keras.layers.Dense(2)(inputs))


def test_average_checkpoints_is_the_mean_of_the_files(tmp_path):
    model = small_model()
    saved = []
    for index in range(3):
        weights = [
            np.random.default_rng(index).normal(size=w.shape).astype(w.dtype)
            for w in model.get_weights()
        ]
        model.set_weights(weights)
        path = str(tmp_path / f"epoch-{index:03d}.weights.h5")
        model.save_weights(path)
        saved.append(weights)
    paths = last_checkpoints(str(tmp_path), 3)
    average_checkpoints(model, paths)
    for got, *parts in zip(model.get_weights(), *saved):
        np.testing.assert_allclose(got, np.mean(parts, axis=0), rtol=1e-6)


def test_last_checkpoints_orders_by_epoch_number(tmp_path):
    for name in ("epoch-010.weights.h5", "epoch-002.weights.h5", "x.txt"):
        (tmp_path / name).write_text("")
    assert [os.path.basename(p) for p in last_checkpoints(tmp_path, 2)] == [
        "epoch-002.weights.h5",
        "epoch-010.weights.h5",
    ]
    assert last_checkpoints(tmp_path, 0) == []


def test_average_checkpoints_needs_a_file():
    with pytest.raises(ValueError, match="Received: paths=\\[\\]"):
        average_checkpoints(small_model(), [])
