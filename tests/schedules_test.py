import keras
import numpy as np
import pytest

from keras_attention import schedules


def numpy_noam(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


@pytest.mark.parametrize("iteration", [0, 1, 99, 3999, 4000, 50_000])
def test_matches_the_paper_formula(iteration):
    schedule = schedules.NoamSchedule(512, warmup_steps=4000)
    expected = numpy_noam(iteration + 1, 512, 4000)
    assert float(schedule(iteration)) == pytest.approx(expected, rel=1e-5)


def test_rises_then_decays_with_peak_at_warmup():
    schedule = schedules.NoamSchedule(256, warmup_steps=100, scale=2.0)
    rates = [float(schedule(i)) for i in range(0, 400)]
    assert int(np.argmax(rates)) == 99
    assert rates[99] == pytest.approx(2.0 * (256 * 100) ** -0.5, rel=1e-5)


def test_serializes_and_drives_an_optimizer():
    schedule = schedules.NoamSchedule(128, warmup_steps=10)
    revived = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule)
    )
    assert revived.get_config() == schedule.get_config()
    optimizer = keras.optimizers.Adam(
        schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9
    )
    config = keras.optimizers.serialize(optimizer)
    restored = keras.optimizers.deserialize(config)
    assert isinstance(restored.learning_rate, schedules.NoamSchedule) or (
        restored.get_config()["learning_rate"]["class_name"] == "NoamSchedule"
    )


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match="Received: d_model=0"):
        schedules.NoamSchedule(0)
    with pytest.raises(ValueError, match="Received: warmup_steps=-5"):
        schedules.NoamSchedule(512, warmup_steps=-5)
