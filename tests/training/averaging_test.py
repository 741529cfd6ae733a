import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import training
from keras_attention.training import averaging


def fitted_model(use_ema, momentum=0.5, steps=3):
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    optimizer = keras.optimizers.SGD(0.1)
    if use_ema:
        optimizer = training.with_moving_average(optimizer, momentum)
    model.compile(optimizer=training.loss_scaled(optimizer), loss="mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(steps * 4, 4)).astype("float32")
    y = rng.normal(size=(steps * 4, 2)).astype("float32")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    return model, x, y


def moved_away(model):
    # `fit` ends by writing the averages into the model (Keras's
    # `finalize_variable_values`); move the weights off them (by new
    # values: on jax a further training step would find the weight and its
    # average in one donated buffer).
    for w in model.trainable_weights:
        w.assign(ops.convert_to_numpy(w) + 0.25)


def weights(model):
    return [np.array(ops.convert_to_numpy(w)) for w in model.trainable_weights]


def averages(model):
    optimizer = averaging.base_optimizer(model.optimizer)
    return [
        np.array(ops.convert_to_numpy(a))
        for a in optimizer._model_variables_moving_average
    ]


def test_the_block_holds_the_averages_and_restores_the_weights():
    model, x, _ = fitted_model(use_ema=True)
    moved_away(model)
    trained, averaged = weights(model), averages(model)
    assert any(np.abs(t - a).max() > 1e-4 for t, a in zip(trained, averaged))
    with training.moving_average_weights(model) as swapped:
        assert swapped is True
        for inside, expected in zip(weights(model), averaged):
            np.testing.assert_array_equal(inside, expected)
        inside_prediction = model.predict(x, verbose=0)
    for after, before in zip(weights(model), trained):
        np.testing.assert_array_equal(after, before)
    for after, before in zip(averages(model), averaged):
        np.testing.assert_array_equal(after, before)
    # The prediction inside used the averaged weights.
    kernel, bias = averaged
    np.testing.assert_allclose(inside_prediction, x @ kernel + bias, rtol=1e-5)


def test_the_weights_come_back_after_an_exception():
    model, _, _ = fitted_model(use_ema=True)
    moved_away(model)
    trained = weights(model)
    with pytest.raises(RuntimeError, match="inside"):
        with training.moving_average_weights(model):
            raise RuntimeError("inside")
    for after, before in zip(weights(model), trained):
        np.testing.assert_array_equal(after, before)


def test_without_an_average_the_block_changes_nothing():
    model, _, _ = fitted_model(use_ema=False)
    before = weights(model)
    assert not training.uses_moving_average(model)
    with training.moving_average_weights(model) as swapped:
        assert swapped is False
        for inside, expected in zip(weights(model), before):
            np.testing.assert_array_equal(inside, expected)
    uncompiled = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    with training.moving_average_weights(uncompiled) as swapped:
        assert swapped is False


def test_with_moving_average_sets_the_momentum_and_rejects_bad_values():
    optimizer = training.with_moving_average(keras.optimizers.Adam(0.01), 0.9)
    assert optimizer.use_ema and optimizer.ema_momentum == 0.9
    assert float(optimizer.learning_rate) == pytest.approx(0.01)
    plain = keras.optimizers.Adam()
    assert training.with_moving_average(plain, 0.0) is plain
    assert training.with_moving_average(plain, None) is plain
    for bad in (1.0, -0.1, True):
        with pytest.raises(ValueError, match=f"Received: momentum={bad!r}"):
            training.with_moving_average(keras.optimizers.Adam(), bad)


def split_model(momentum):
    # Two layers, each updated by its own optimizer of a MultiOptimizer.
    keras.utils.set_random_seed(3)
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, name="first")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2, name="second")(hidden))
    optimizer = keras.optimizers.MultiOptimizer(
        keras.optimizers.OptimizerMap(
            keras.optimizers.SGD(0.1), {"second/.*": keras.optimizers.Adam()}
        )
    )
    optimizer = training.with_moving_average(optimizer, momentum)
    model.compile(optimizer=optimizer, loss="mse")
    return model


def test_a_multi_optimizer_averages_and_swaps_every_set():
    model = split_model(0.5)
    kinds = {
        type(inner).__name__: inner for inner in model.optimizer.optimizers
    }
    first, second = kinds["SGD"], kinds["Adam"]
    assert first.use_ema and second.use_ema and first.ema_momentum == 0.5
    assert training.uses_moving_average(model)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 4)).astype("float32")
    y = rng.normal(size=(12, 2)).astype("float32")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    moved_away(model)
    trained = {w.path: np.array(ops.convert_to_numpy(w)) for w in model.weights}
    averaged = {}
    for inner in (first, second):
        for variable, average in zip(
            inner._trainable_variables, inner._model_variables_moving_average
        ):
            averaged[variable.path] = np.array(ops.convert_to_numpy(average))
    assert sorted(averaged) == sorted(trained)  # both sets are averaged
    with training.moving_average_weights(model) as swapped:
        assert swapped is True
        for w in model.weights:
            np.testing.assert_array_equal(
                ops.convert_to_numpy(w), averaged[w.path]
            )
    for w in model.weights:
        np.testing.assert_array_equal(ops.convert_to_numpy(w), trained[w.path])


def test_a_multi_optimizer_on_a_function_needs_averages_set_inside():
    optimizer = keras.optimizers.MultiOptimizer(
        lambda variable: keras.optimizers.SGD()
    )
    with pytest.raises(ValueError, match="OptimizerMap"):
        training.with_moving_average(optimizer, 0.9)
