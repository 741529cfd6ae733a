"""Integer inputs are read as numbers; float16 token sampling stays finite.

- Every float layer that takes feature tensors casts integer and boolean
  inputs to its compute dtype, as `keras.layers.Dense` does, and gives
  the output of the same values as floats. (Before, torch raised a
  `RuntimeError` inside `EinsumDense` for `MultiHeadAttention`, and
  tensorflow raised in `DirectionalSelfAttention`, `Source2TokenAttention`
  and ReSAN.)
- `ReinforcedSequenceSampler` under float16 scores tokens in float32: its
  features hold products of inputs, which overflowed float16 from inputs
  of about 1e3 and gave NaN probabilities.
"""

import keras
import numpy as np
import pytest

from keras_attention import layers

X = (np.arange(2 * 5 * 8).reshape(2, 5, 8) % 7).astype("int32")
Y = (np.arange(2 * 4 * 8).reshape(2, 4, 8) % 5).astype("int32")

# name: (layer factory, inputs); the first output is compared.
LAYERS = {
    "MultiHeadAttention": (lambda: layers.MultiHeadAttention(2, 4), (X, Y)),
    "DirectionalSelfAttention": (
        lambda: layers.DirectionalSelfAttention(),
        (X,),
    ),
    "Source2TokenAttention": (lambda: layers.Source2TokenAttention(), (X,)),
    "ReinforcedSelfAttention": (
        lambda: layers.ReinforcedSelfAttention(seed=1),
        (X,),
    ),
    "ReinforcedSequenceSampler": (
        lambda: layers.ReinforcedSequenceSampler(seed=1),
        (X,),
    ),
    "SoftAlignment": (lambda: layers.SoftAlignment(), (X, Y)),
    "IntraSentenceAttention": (lambda: layers.IntraSentenceAttention(), (X,)),
    "FusionGate": (lambda: layers.FusionGate(), (X, X)),
    "TransformerEncoderBlock": (
        lambda: layers.TransformerEncoderBlock(
            num_heads=2, intermediate_dim=16
        ),
        (X,),
    ),
    "TransformerDecoderBlock": (
        lambda: layers.TransformerDecoderBlock(
            num_heads=2, intermediate_dim=16
        ),
        (X, Y),
    ),
}


def first(outputs):
    if isinstance(outputs, (tuple, list)):
        outputs = outputs[0]
    return keras.ops.convert_to_numpy(keras.ops.cast(outputs, "float32"))


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_integer_inputs_give_the_output_of_their_float_values(name):
    make, inputs = LAYERS[name]
    layer = make()
    from_floats = first(layer(*[x.astype("float32") for x in inputs]))
    from_ints = first(layer(*inputs))
    np.testing.assert_allclose(from_ints, from_floats, rtol=1e-6, atol=1e-6)


def test_boolean_inputs_are_read_as_zeros_and_ones():
    layer = layers.MultiHeadAttention(2, 4)
    x = X > 2
    expected = first(layer(x.astype("float32"), x.astype("float32")))
    np.testing.assert_allclose(first(layer(x, x)), expected, atol=1e-6)


@pytest.mark.parametrize("scale", [1e3, 1e4])
def test_float16_sampler_scores_stay_finite_at_large_inputs(scale):
    rng = np.random.default_rng(0)
    x = (np.sign(rng.normal(size=(2, 6, 8))) * scale).astype("float32")
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 0, 0, 0, 0, 0]], bool)
    layer = layers.ReinforcedSequenceSampler(seed=1, dtype="mixed_float16")
    for training in (False, True):
        selection, log_prob, probabilities = layer(
            x, mask=mask, training=training, return_probabilities=True
        )
        probabilities = keras.ops.convert_to_numpy(probabilities)
        log_prob = keras.ops.convert_to_numpy(log_prob)
        assert np.isfinite(probabilities).all()
        assert np.isfinite(log_prob).all()
        # Padding is never selected.
        assert not keras.ops.convert_to_numpy(selection)[~mask].any()
    # The scores come from float32 sublayers; the layer keeps its policy.
    assert layer.compute_dtype == "float16"
    assert layer.context_dense.compute_dtype == "float32"
    assert layer.keep_dense.compute_dtype == "float32"
