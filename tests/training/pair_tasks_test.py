"""The pair applications' shared recipe: the training clock
(`pair_tasks.TrainingTimer`) and the one ReSAN configuration."""

import dataclasses
import inspect

import keras
import numpy as np

from keras_attention import models
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


def test_one_resan_configuration_builds_both_heads():
    config = dataclasses.replace(
        pair_tasks.PairTaskConfig(),
        hidden_dim=4,
        sparsity_penalty=0.01,
        empty_context="mean",
        sampler_keep_bias=0.5,
    )
    arguments = config.resan_arguments()
    for head in (models.ReSANClassifier, models.ReSANRelatedness):
        assert set(arguments) <= set(inspect.signature(head).parameters)
        model = head(vocabulary_size=10, embedding_dim=4, **arguments)
        saved = model.get_config()
        for name, value in arguments.items():
            assert saved[name] == value, (head.__name__, name)


def test_a_task_default_keeps_the_shared_help():
    shared = pair_tasks.PairTaskConfig.__dataclass_fields__["sparsity_penalty"]
    field = pair_tasks.PairTaskConfig.default_for("sparsity_penalty", 0.006)
    assert field.default == 0.006
    assert field.metadata["help"] == shared.metadata["help"]


def test_the_time_limit_says_in_the_metrics_when_it_cut_the_run():
    timer = pair_tasks.TrainingTimer()
    no_limit = pair_tasks.TimeLimit(0)
    fit(small_model(), 2, [timer, no_limit])
    assert pair_tasks.time_limit_record([timer, no_limit]) == {
        "stopped_by_time_limit": False
    }
    tight = pair_tasks.TimeLimit(1e-9)  # past it after the first epoch
    history = fit(small_model(), 3, [tight])
    assert len(history.history["loss"]) == 1
    record = pair_tasks.time_limit_record([tight])
    assert record["stopped_by_time_limit"] is True
    assert "not comparable" in record["notes"]["stopped_by_time_limit"]
