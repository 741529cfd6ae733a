import os
import tempfile

import keras
import numpy as np
import pytest
from keras import ops

import keras_attention
from keras_attention.models import Transformer
from keras_attention.models import transformer_base
from keras_attention.models.transformer_base import PRESETS


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def tiny(**kwargs):
    config = dict(
        vocabulary_size=23,
        num_layers=2,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    config.update(kwargs)
    return Transformer(**config)


def reloaded(model):
    """`model` saved to a `.keras` file and loaded with `safe_mode=True`."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        return keras.saving.load_model(path, safe_mode=True)


def inputs(source, target):
    return {
        "encoder_token_ids": np.array(source, "int32"),
        "decoder_token_ids": np.array(target, "int32"),
    }


def test_three_way_tying_shares_one_embedding_matrix():
    model = tiny()
    matrices = [w for w in model.weights if tuple(w.shape) == (23, 8)]
    assert len(matrices) == 1
    logits = model(inputs([[3, 4, 5]], [[1, 6]]))
    assert tuple(ops.shape(logits)) == (1, 2, 23)
    # The count matches one embedding plus the blocks.
    blocks = sum(
        b.count_params() for b in model.encoder_blocks + model.decoder_blocks
    )
    assert model.count_params() == 23 * 8 + blocks


@pytest.mark.parametrize(
    "norm_first, position", [(False, "sinusoidal"), (True, "learned")]
)
def test_padding_never_changes_real_positions(norm_first, position):
    model = tiny(norm_first=norm_first, position=position)
    short = to_numpy(model(inputs([[3, 4, 5]], [[1, 6, 7]])))
    padded = to_numpy(model(inputs([[3, 4, 5, 0, 0]], [[1, 6, 7, 0]])))
    np.testing.assert_allclose(padded[:, :3], short, atol=1e-5)


def test_target_positions_never_see_later_targets():
    model = tiny()
    a = to_numpy(model(inputs([[3, 4]], [[1, 6, 7, 8]])))
    b = to_numpy(model(inputs([[3, 4]], [[1, 6, 9, 9]])))
    np.testing.assert_allclose(a[:, :2], b[:, :2], atol=1e-5)
    assert not np.allclose(a[:, 2:], b[:, 2:])


def test_keras_file_reloads_with_same_outputs():
    model = tiny(seed=1)
    data = inputs([[3, 4, 5, 0]], [[1, 6, 0]])
    expected = to_numpy(model(data))
    revived = reloaded(model)
    assert isinstance(revived, Transformer)
    assert revived.get_config() == model.get_config()
    np.testing.assert_allclose(to_numpy(revived(data)), expected, atol=1e-6)


def test_dtype_argument_is_saved_and_reloaded():
    # Built with `dtype` under a float32 global policy: the reloaded model
    # must compute in the same policy, not the global one.
    model = tiny(seed=1, dtype="mixed_bfloat16")
    assert model.dtype_policy.name == "mixed_bfloat16"
    data = inputs([[3, 4, 5, 0]], [[1, 6, 0]])
    expected = to_numpy(model(data))
    revived = reloaded(model)
    assert revived.dtype_policy.name == "mixed_bfloat16"
    assert revived.decoder_blocks[0].compute_dtype == "bfloat16"
    np.testing.assert_array_equal(to_numpy(revived(data)), expected)


def test_decode_step_with_caches_equals_full_decoder():
    model = tiny()
    source = np.array([[3, 4, 5, 0]], "int32")
    target = np.array([[1, 6, 7, 8]], "int32")
    full = to_numpy(model(inputs(source, target)))
    encoded, mask = model.encode(source)
    self_cache, cross_cache = model.initial_cache(encoded, 4)
    steps = []
    for t in range(4):
        logits, self_cache = model.decode_step(
            target[:, t : t + 1], t, self_cache, cross_cache, mask
        )
        steps.append(to_numpy(logits))
    np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)


def test_stacked_caches_and_output_kernel_give_the_same_logits():
    # The one cache layout is a heads-first (keys, values) pair per layer;
    # keras-hub's stacked (B, num_layers, 2, L, N, H) goes through the same
    # step and comes back stacked. The output projection transposed once
    # gives the same logits. Here with a padded source.
    model = tiny()
    source = np.array([[3, 4, 5, 0], [6, 0, 0, 0]], "int32")
    target = np.array([[1, 6, 7, 8], [1, 9, 10, 11]], "int32")
    encoded, mask = model.encode(source)
    pairs, cross = model.initial_cache(encoded, 4)
    heads, width = model.num_heads, model.hidden_dim // model.num_heads
    assert len(pairs) == len(cross) == model.num_layers
    assert tuple(ops.shape(pairs[0][0])) == (2, heads, 4, width)
    assert tuple(ops.shape(cross[0][1])) == (2, heads, 4, width)
    stacked = keras_attention.ops.to_stacked_cache(pairs)
    stacked_cross = keras_attention.ops.to_stacked_cache(cross)
    assert tuple(ops.shape(stacked)) == (
        2,
        model.num_layers,
        2,
        4,
        heads,
        width,
    )
    kernel = transformer_base.output_kernel(model)
    assert tuple(ops.shape(kernel)) == (8, 23)
    projected = pairs
    for t in range(4):
        ids = target[:, t : t + 1]
        expected, pairs = model.decode_step(ids, t, pairs, cross, mask)
        actual, stacked = model.decode_step(
            ids, t, stacked, stacked_cross, mask
        )
        np.testing.assert_allclose(
            to_numpy(actual), to_numpy(expected), atol=1e-6
        )
        with_kernel, projected = model.decode_step(
            ids, t, projected, cross, mask, output_kernel=kernel
        )
        np.testing.assert_allclose(
            to_numpy(with_kernel), to_numpy(expected), atol=1e-5
        )
    np.testing.assert_allclose(
        to_numpy(keras_attention.ops.to_stacked_cache(pairs)),
        to_numpy(stacked),
        atol=1e-6,
    )
    np.testing.assert_array_equal(
        to_numpy(pairs[-1][1]),
        np.swapaxes(to_numpy(stacked)[:, -1, 1], 1, 2),
    )


def test_presets_follow_the_paper():
    assert PRESETS["base"] == dict(
        num_layers=6,
        hidden_dim=512,
        num_heads=8,
        intermediate_dim=2048,
        dropout=0.1,
    )
    assert PRESETS["big"]["hidden_dim"] == 1024
    assert PRESETS["big"]["num_heads"] == 16
    model = Transformer.from_preset("tiny", vocabulary_size=31, num_layers=1)
    assert model.hidden_dim == 128 and model.num_layers == 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocabulary_size": 0}, "Received: vocabulary_size=0"),
        ({"hidden_dim": 10, "num_heads": 4}, "hidden_dim=10, num_heads=4"),
        ({"position": "rotary"}, "Received: position='rotary'"),
        ({"dropout": -0.1}, "Received: dropout=-0.1"),
    ],
)
def test_bad_arguments_name_the_value(kwargs, message):
    config = dict(vocabulary_size=10, hidden_dim=8, num_heads=2)
    config.update(kwargs)
    with pytest.raises(ValueError, match=message):
        Transformer(**config)
    with pytest.raises(ValueError, match="Received: preset='huge'"):
        Transformer.from_preset("huge", vocabulary_size=10)
