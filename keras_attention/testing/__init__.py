"""Test utilities shipped with the package: the shared `LayerTestCase`."""

from keras_attention.testing.layer_test_case import LayerTestCase
from keras_attention.testing.layer_test_case import build_model
from keras_attention.testing.layer_test_case import call_layer
from keras_attention.testing.layer_test_case import pad_inputs

__all__ = ["LayerTestCase", "build_model", "call_layer", "pad_inputs"]
