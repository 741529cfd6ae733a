"""The pair applications' training clock (`pair_tasks.TrainingTimer`)."""

import keras
import numpy as np

from keras_attention.training import pair_tasks


def fit(model, epochs, callbacks, initial_epoch=0):
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    y = x.sum(-1, keepdims=True)
    return model.fit(
        x,
        y,
        batch_size=8,
        epochs=epochs,
        initial_epoch=initial_epoch,
        validation_data=(x, y),
        callbacks=callbacks,
        verbose=0,
    )


def small_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_timer_records_each_epoch_and_keeps_them_across_a_restore():
    model = small_model()
    first = pair_tasks.TrainingTimer(keys=("val_loss", "missing"))
    history = fit(model, 2, [first])
    assert len(first.epoch_seconds) == 2
    assert all(s > 0 for s in first.epoch_seconds)
    np.testing.assert_allclose(
        first.logged["val_loss"], history.history["val_loss"]
    )
    assert first.logged["missing"] == [None, None]
    state = first.get_state()
    assert state["run_seconds"] >= sum(first.epoch_seconds)

    # A later process restores the state and trains epoch 3.
    second = pair_tasks.TrainingTimer(keys=("val_loss", "missing"))
    restore = keras.callbacks.LambdaCallback(
        on_train_begin=lambda logs: second.set_state(state)
    )
    history = fit(model, 3, [second, restore], initial_epoch=2)
    assert len(second.epoch_seconds) == 3
    assert second.epoch_seconds[:2] == state["epoch_seconds"]
    assert second.logged["val_loss"][:2] == state["logged"]["val_loss"]
    np.testing.assert_allclose(
        second.logged["val_loss"][2:], history.history["val_loss"]
    )
    assert second.run_seconds(5.0) == state["run_seconds"] + 5.0


def test_timer_restores_a_backup_written_before_its_logs_were_kept():
    timer = pair_tasks.TrainingTimer(keys=("val_accuracy",))
    timer.on_train_begin()
    timer.set_state({"epoch_seconds": [3.0, 2.0]})
    assert timer.epoch_seconds == [3.0, 2.0]
    assert timer.logged == {"val_accuracy": []}
    assert timer.run_seconds(7.0) == 7.0
