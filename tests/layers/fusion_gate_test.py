import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(11)


def numpy_fusion_gate(inputs, context, kernel, bias):
    gate = 1.0 / (
        1.0 + np.exp(-(np.concatenate([inputs, context], -1) @ kernel + bias))
    )
    return gate * inputs + (1.0 - gate) * context


class FusionGateTest(LayerTestCase):
    def test_layer_contract(self):
        self.run_layer_test(
            layers.FusionGate,
            init_kwargs={"bias_initializer": "ones"},
            input_data={
                "inputs": RNG.normal(size=(2, 4, 6)).astype("float32"),
                "context": RNG.normal(size=(2, 4, 6)).astype("float32"),
            },
            expected_output_shape=(2, 4, 6),
        )

    def test_matches_numpy_reference(self):
        gate = layers.FusionGate()
        x = RNG.normal(size=(2, 3, 5))
        s = RNG.normal(size=(2, 3, 5))
        output = gate(x.astype("float32"), s.astype("float32"))
        kernel, bias = (
            np.float64(ops.convert_to_numpy(w)) for w in gate.weights
        )
        np.testing.assert_allclose(
            ops.convert_to_numpy(output),
            numpy_fusion_gate(x, s, kernel, bias),
            atol=1e-5,
        )

    def test_mismatched_features_are_rejected(self):
        x = np.zeros((2, 3, 5), "float32")
        with pytest.raises(ValueError, match=r"context with shape \(2, 3, 4\)"):
            layers.FusionGate()(x, np.zeros((2, 3, 4), "float32"))
