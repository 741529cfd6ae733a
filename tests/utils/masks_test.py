"""Keras-mask bookkeeping on every backend (jax arrays keep masks by id)."""

import warnings

import keras
import numpy as np

from keras_attention import layers
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.masks import kept_keras_masks
from keras_attention.utils.masks import keras_mask


def masked_embeddings():
    ids = np.array([[3, 1, 0, 0], [2, 2, 2, 0]])
    x = keras.layers.Embedding(5, 8, mask_zero=True)(ids)
    assert keras_mask(x) is not None
    return x


def test_drop_keras_masks_detaches_the_mask():
    x = masked_embeddings()
    drop_keras_masks(x, None)
    assert keras_mask(x) is None


def test_kept_keras_masks_puts_the_mask_back():
    x = masked_embeddings()
    mask = keras.ops.convert_to_numpy(keras_mask(x))
    with kept_keras_masks(x) as (inside,):
        drop_keras_masks(x)
        assert keras_mask(x) is None
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(inside), mask)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(keras_mask(x)), mask
    )


def test_attention_on_masked_inputs_does_not_warn():
    # Inside a compiled `predict` the inputs are traced tensors (on jax,
    # tracers that take no attributes, whose masks Keras keeps by id).
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(5, 8, mask_zero=True)(tokens)
    y = layers.MultiHeadAttention(num_heads=2, key_dim=4)(x, x)
    model = keras.Model(tokens, y)
    ids = np.array([[3, 1, 0, 0], [2, 2, 2, 0]])
    with warnings.catch_warnings():
        # Keras's mask warning is a UserWarning (the numpy deprecations
        # that Keras's backends raise are left to tests/readme_test.py).
        warnings.simplefilter("error", UserWarning)
        model.predict(ids, verbose=0)
        eager = layers.MultiHeadAttention(num_heads=2, key_dim=4)
        x = masked_embeddings()
        out = eager(x, x)
    # The output carries the query's mask.
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(keras_mask(out)),
        [[True, True, False, False], [True, True, True, False]],
    )
