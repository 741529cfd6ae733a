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
        ({"activation_dropout": 1.5}, "Received: activation_dropout=1.5"),
        ({"attention_dropout": -1}, "Received: attention_dropout=-1"),
    ],
)
def test_bad_arguments_name_the_value(kwargs, message):
    config = dict(vocabulary_size=10, hidden_dim=8, num_heads=2)
    config.update(kwargs)
    with pytest.raises(ValueError, match=message):
        Transformer(**config)
    with pytest.raises(ValueError, match="Received: preset='huge'"):
        Transformer.from_preset("huge", vocabulary_size=10)


def test_dropout_rates_reach_the_layers_and_the_config():
    model = tiny(dropout=0.2, attention_dropout=0.15, activation_dropout=0.05)
    for block in model.encoder_blocks + model.decoder_blocks:
        assert block.dropout == 0.2
        assert block.feedforward_dropout.rate == 0.2
        assert block.attention_dropout == 0.15
        assert block.self_attention.dropout == 0.15
        assert block.activation_dropout == 0.05
        assert block.feedforward_activation_dropout.rate == 0.05
    for block in model.decoder_blocks:
        assert block.cross_attention.dropout == 0.15
    config = model.get_config()
    assert config["attention_dropout"] == 0.15
    assert config["activation_dropout"] == 0.05
    revived = reloaded(model)
    assert revived.decoder_blocks[0].feedforward_activation_dropout.rate == 0.05
    assert revived.encoder_blocks[0].self_attention.dropout == 0.15
    # Off by default: no layer, so the weights and streams are unchanged.
    plain = tiny()
    assert plain.encoder_blocks[0].feedforward_activation_dropout is None
    assert plain.get_config()["activation_dropout"] == 0.0
    assert len(plain.variables) == len(tiny(activation_dropout=0.0).variables)


def test_activation_dropout_acts_in_training_only():
    x = inputs([[4, 5, 6, 0]], [[2, 7, 8]])
    model = tiny(dropout=0.0, activation_dropout=0.5, seed=3)
    inference = to_numpy(model(x, training=False))
    plain = tiny(dropout=0.0, seed=3)
    plain.set_weights(model.get_weights())
    np.testing.assert_allclose(
        inference, to_numpy(plain(x, training=False)), atol=1e-6
    )
    assert not np.allclose(to_numpy(model(x, training=True)), inference)
    np.testing.assert_allclose(
        to_numpy(plain(x, training=True)), inference, atol=1e-6
    )


def numpy_log_softmax(logits):
    logits = np.float64(logits)
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def numpy_cross_entropy(labels, logits):
    log_probs = numpy_log_softmax(logits)
    picked = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
    return -picked[labels != 0].mean()


def numpy_symmetric_kl(labels, logits_1, logits_2):
    log_p, log_q = numpy_log_softmax(logits_1), numpy_log_softmax(logits_2)
    value = 0.5 * ((np.exp(log_p) - np.exp(log_q)) * (log_p - log_q)).sum(-1)
    return value[labels != 0].mean()


def test_r_drop_compute_loss_runs_a_second_pass():
    # Without dropout the second pass gives the clean logits, so the loss
    # of given first-pass logits is known in closed form.
    x = inputs([[4, 5, 6, 0], [7, 8, 0, 0]], [[2, 9, 10, 11], [2, 12, 0, 0]])
    labels = np.array([[9, 10, 11, 3], [12, 3, 0, 0]])
    model = tiny(dropout=0.0)
    alpha = 0.8
    model.compile(
        optimizer="adam",
        loss=keras_attention.losses.RDropLoss(
            keras_attention.losses.LabelSmoothedSparseCategoricalCrossentropy(
                epsilon=0.0
            ),
            alpha=alpha,
        ),
    )
    clean = to_numpy(model(x, training=False))
    first = clean + np.random.default_rng(0).normal(size=clean.shape)
    first = first.astype("float32")
    loss = model.compute_loss(x, labels, first, training=True)
    expected = 0.5 * (
        numpy_cross_entropy(labels, first) + numpy_cross_entropy(labels, clean)
    ) + alpha * numpy_symmetric_kl(labels, first, clean)
    assert float(loss) == pytest.approx(expected, rel=1e-4)
    # Evaluation: the wrapped loss of the one pass.
    loss = model.compute_loss(x, labels, first, training=False)
    assert float(loss) == pytest.approx(
        numpy_cross_entropy(labels, first), rel=1e-4
    )


def test_r_drop_trains_on_two_passes_with_different_masks():
    x = inputs([[4, 5, 6, 0], [7, 8, 0, 0]], [[2, 9, 10, 11], [2, 12, 0, 0]])
    labels = np.array([[9, 10, 11, 3], [12, 3, 0, 0]])
    model = tiny(dropout=0.3, seed=1, num_layers=1)
    loss = keras_attention.losses.RDropLoss(
        keras_attention.losses.LabelSmoothedSparseCategoricalCrossentropy(),
        alpha=1.0,
    )
    passes = []
    two_pass_loss = loss.two_pass_loss

    def spy(compute_loss, y, logits_1, logits_2, sample_weight):
        passes.append((to_numpy(logits_1), to_numpy(logits_2)))
        return two_pass_loss(compute_loss, y, logits_1, logits_2, sample_weight)

    loss.two_pass_loss = spy
    model.compile(optimizer="adam", loss=loss)
    # The second pass, run inside `compute_loss`, drops other units.
    value = model.compute_loss(
        x, labels, model(x, training=True), training=True
    )
    assert np.isfinite(float(value))
    assert len(passes) == 1
    first, second = passes[0]
    assert first.shape == second.shape == (2, 4, 23)
    assert not np.allclose(first, second)
    # A training step of this backend's trainer (eager: compiling it
    # would cost the suite more than it checks).
    loss.two_pass_loss = two_pass_loss
    model.compile(optimizer="adam", loss=loss, run_eagerly=True)
    before = [to_numpy(w) for w in model.trainable_weights]
    assert np.isfinite(model.train_on_batch(x, labels))
    after = [to_numpy(w) for w in model.trainable_weights]
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
