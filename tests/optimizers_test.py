import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import optimizers


def two_groups(**adam):
    # Variable "a" in the default group, "b" in its own.
    a = keras.Variable(np.linspace(-1.0, 1.0, 6).reshape(2, 3), name="a")
    b = keras.Variable(np.array([0.5, -0.25, 2.0]), name="b")
    optimizer = optimizers.GroupSkippingOptimizer(
        keras.optimizers.OptimizerMap(
            keras.optimizers.Adam(0.1, **adam),
            {"b": keras.optimizers.Adam(0.1, **adam)},
        )
    )
    return optimizer, [a, b]


def group_optimizers(optimizer):
    # (default optimizer, the mapped one); `optimizers` lists the mapped
    # ones first.
    mapping = optimizer._optimizer_map
    return mapping.default_optimizer, mapping[next(iter(mapping))]


def numpy_values(variables):
    return [np.array(ops.convert_to_numpy(v)) for v in variables]


# Tensors: the torch optimizers take no NumPy gradients.
GRAD_A = ops.convert_to_tensor([[0.3, -0.2, 0.1], [0.0, 0.5, -0.4]])
GRAD_B = ops.convert_to_tensor([0.2, 0.1, -0.3])


def test_idle_group_keeps_its_variables_and_state_bit_for_bit():
    optimizer, (a, b) = two_groups(use_ema=True, ema_momentum=0.9)
    for _ in range(2):
        optimizer.apply([GRAD_A, GRAD_B], [a, b])
    first, second = group_optimizers(optimizer)
    (average_a,) = first._model_variables_moving_average
    # Everything of group "a" but its moving average.
    state = [a] + [v for v in first.variables if v is not average_a]
    before = numpy_values(state)
    weights, average = numpy_values([a, average_a])
    assert np.abs(average - weights).max() > 1e-3  # not a trivial case
    state_b = numpy_values([b] + second.variables)
    # Group "a" has only zeros: it takes no step; "b" steps.
    optimizer.apply([ops.zeros_like(GRAD_A), GRAD_B], [a, b])
    for after, start in zip(numpy_values(state), before):
        np.testing.assert_array_equal(after, start)
    # Its average follows the unchanged weights (Keras's rule, momentum 0.9).
    np.testing.assert_allclose(
        numpy_values([average_a])[0],
        0.9 * average + 0.1 * weights,
        rtol=1e-6,
    )
    moved = [
        np.abs(after - start).max()
        for after, start in zip(numpy_values([b] + second.variables), state_b)
    ]
    assert moved[0] > 0.0
    assert int(ops.convert_to_numpy(first.iterations)) == 2
    assert int(ops.convert_to_numpy(second.iterations)) == 3
    assert int(ops.convert_to_numpy(optimizer.iterations)) == 3


def test_a_group_idle_from_the_start_averages_its_weights():
    # Keras creates the averages as zeros and sets them at the first step;
    # a group that has not stepped yet must not average zeros.
    optimizer, (a, b) = two_groups(use_ema=True, ema_momentum=0.9)
    for _ in range(2):
        optimizer.apply([ops.zeros_like(GRAD_A), GRAD_B], [a, b])
    first, _ = group_optimizers(optimizer)
    (average_a,) = first._model_variables_moving_average
    weights, average = numpy_values([a, average_a])
    np.testing.assert_array_equal(average, weights)
    assert int(ops.convert_to_numpy(first.iterations)) == 0


def test_a_single_nonzero_entry_is_a_step():
    optimizer, (a, b) = two_groups()
    grad = np.zeros((2, 3), "float32")
    grad[1, 2] = 1e-30
    grad = ops.convert_to_tensor(grad)
    optimizer.apply([grad, ops.zeros_like(GRAD_B)], [a, b])
    first, second = group_optimizers(optimizer)
    assert int(ops.convert_to_numpy(first.iterations)) == 1
    assert int(ops.convert_to_numpy(second.iterations)) == 0


def test_steps_with_gradients_match_one_optimizer():
    # Adam is per variable: two Adams on two groups that both step every
    # time give the updates of one Adam on all variables.
    optimizer, grouped = two_groups()
    single = [keras.Variable(v.value, name=v.name) for v in grouped]
    adam = keras.optimizers.Adam(0.1)
    for scale in (1.0, -0.5, 2.0):
        grads = [scale * GRAD_A, scale * GRAD_B]
        optimizer.apply(grads, grouped)
        adam.apply(grads, single)
    for mine, reference in zip(numpy_values(grouped), numpy_values(single)):
        np.testing.assert_allclose(mine, reference, rtol=1e-6, atol=1e-7)


def test_compiled_fit_skips_an_idle_group():
    # A loss weight of 0 gives the "idle" layer gradients of exactly zero
    # in every compiled step (as a schedule's phase weight does): its Adam
    # takes no step, while the "kept" layer's Adam takes every one.
    inputs = keras.Input((3,))
    model = keras.Model(
        inputs,
        {
            "kept": keras.layers.Dense(2, name="kept")(inputs),
            "idle": keras.layers.Dense(2, name="idle")(inputs),
        },
    )
    model.compile(
        optimizer=optimizers.GroupSkippingOptimizer(
            keras.optimizers.OptimizerMap(
                keras.optimizers.Adam(0.1),
                {"idle/.*": keras.optimizers.Adam(0.1)},
            )
        ),
        loss={"kept": "mse", "idle": "mse"},
        loss_weights={"kept": 1.0, "idle": 0.0},
    )
    x = np.random.default_rng(0).normal(size=(8, 3)).astype("float32")
    y = {"kept": np.ones((8, 2), "float32"), "idle": np.ones((8, 2), "float32")}
    idle = model.get_layer("idle")
    before = numpy_values(idle.weights)
    model.fit(x, y, batch_size=8, epochs=4, verbose=0)
    for after, start in zip(numpy_values(idle.weights), before):
        np.testing.assert_array_equal(after, start)
    kept_optimizer, idle_optimizer = group_optimizers(model.optimizer)
    assert int(ops.convert_to_numpy(kept_optimizer.iterations)) == 4
    assert int(ops.convert_to_numpy(idle_optimizer.iterations)) == 0


def test_config_round_trip():
    optimizer, _ = two_groups()
    config = keras.optimizers.serialize(optimizer)
    revived = keras.optimizers.deserialize(config)
    assert isinstance(revived, optimizers.GroupSkippingOptimizer)
    assert [o.get_config() for o in revived.optimizers] == [
        o.get_config() for o in optimizer.optimizers
    ]


def test_bad_gradients_are_rejected():
    optimizer, (a, b) = two_groups()
    with pytest.raises(ValueError, match="Received: 1 gradients for 2"):
        optimizer.apply([GRAD_A], [a, b])
    fresh, _ = two_groups()
    with pytest.raises(ValueError, match="must be built first"):
        fresh.apply([GRAD_A, GRAD_B])
