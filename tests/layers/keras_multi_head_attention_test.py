"""Keras's own MultiHeadAttention test module, run against our class.

The module ships inside the installed Keras wheel
(`keras/src/layers/attention/multi_head_attention_test.py`). It is imported,
not copied: its `layers` name is swapped for a namespace whose
`MultiHeadAttention` is ours and whose other layers are Keras's, and every
one of its tests then runs unchanged. Tests that read Keras's private
attributes are expected failures, each with its reason; nothing else is.
"""

import types

import keras
import pytest
from keras.src import layers as keras_layers
from keras.src.layers.attention import multi_head_attention_test as keras_test

from keras_attention import layers

# Test name -> the private attribute of Keras's class it reads. Ours keeps
# the arguments in public attributes of the same names (`sliding_window`,
# `flash_attention`), which the tests do not read.
PRIVATE_ATTRIBUTES = {
    "test_sliding_window_serialization": "_sliding_window",
    "test_flash_attention_with_errors": "_flash_attention",
}


class _OurLayers(types.ModuleType):
    """`keras.src.layers` with our MultiHeadAttention in place of Keras's."""

    MultiHeadAttention = layers.MultiHeadAttention

    def __getattr__(self, name):
        return getattr(keras_layers, name)


@pytest.fixture(autouse=True)
def our_layers(monkeypatch):
    monkeypatch.setattr(keras_test, "layers", _OurLayers("layers"))


def _expected_failure(name, attribute):
    def test(self):
        getattr(keras_test.MultiHeadAttentionTest, name)(self)

    return pytest.mark.xfail(
        reason=f"reads Keras's private attribute `{attribute}`",
        raises=AttributeError,
        strict=True,
    )(test)


class KerasMultiHeadAttentionTest(keras_test.MultiHeadAttentionTest):
    locals().update(
        {
            name: _expected_failure(name, attribute)
            for name, attribute in PRIVATE_ATTRIBUTES.items()
        }
    )


def test_the_swap_reaches_keras_tests():
    # Guards against a Keras release that stops looking the class up through
    # its module's `layers` name: the tests would then silently test Keras.
    assert keras_test.layers.MultiHeadAttention is layers.MultiHeadAttention
    assert keras_test.layers.Embedding is keras.layers.Embedding
