"""ReSAN's training phases: the soft network alone, the samplers alone,
then both, counted in optimizer steps saved with the model."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_attention")
class TrainingSchedule(keras.layers.Layer):
    """The ReSAN training phases, from a step counter saved with the model.

    ```
    step < soft_only_steps:                      soft network alone, every
                                                 real token selected
    soft_only_steps <= step
      < soft_only_steps + sampler_only_steps:    samplers alone
    later:                                       both
    ```

    Its `step` variable counts the training forward passes (one per
    optimizer step under `fit`) and is saved with the weights and backups,
    so an interrupted run resumes in the same phase at the same step.

    Args:
        soft_only_steps: int. Defaults to `0`.
        sampler_only_steps: int. Defaults to `0`.

    Call arguments:
        inputs: any tensor `(B, ...)`; only its batch size is read.
        training: bool. Outside training both weights are `1`, and, with
            a soft-only phase, every real token is selected until the
            samplers' first training step (counter <= `soft_only_steps`).

    Returns:
        A float32 tensor `(B, 3)`: `select_all`, `task_weight` and
        `policy_weight` of the step, repeated over the batch.
    """

    def __init__(self, soft_only_steps=0, sampler_only_steps=0, **kwargs):
        super().__init__(**kwargs)
        self.soft_only_steps = soft_only_steps
        self.sampler_only_steps = sampler_only_steps

    def build(self, inputs_shape):
        self.step = self.add_weight(
            shape=(),
            dtype="int32",
            initializer="zeros",
            trainable=False,
            aggregation="only_first_replica",
            name="step",
        )
        self.built = True

    def call(self, inputs, training=None):
        if not training:
            # Until the samplers' first step, the model is the soft
            # network trained on every real token, and is evaluated so, as
            # the authors' code does: with untrained samplers its inputs
            # would differ from those it learned on.
            # The counter equals `soft_only_steps` after the last soft
            # step, still before the samplers' first.
            untrained = ops.logical_and(
                ops.less_equal(
                    ops.convert_to_tensor(self.step), self.soft_only_steps
                ),
                ops.convert_to_tensor(self.soft_only_steps > 0),
            )
            weights = ops.concatenate(
                [
                    ops.cast(ops.reshape(untrained, (1,)), "float32"),
                    ops.ones((2,), "float32"),
                ],
                axis=0,
            )
        else:
            # Assign, then read: a read before the assign aliases the
            # variable on some backends (torch) and would see the new value.
            self.step.assign(self.step + 1)
            step = ops.convert_to_tensor(self.step) - 1
            soft = ops.less(step, self.soft_only_steps)
            samplers = ops.logical_and(
                ops.logical_not(soft),
                ops.less(step, self.soft_only_steps + self.sampler_only_steps),
            )
            weights = ops.cast(
                ops.stack(
                    [soft, ops.logical_not(samplers), ops.logical_not(soft)]
                ),
                "float32",
            )
        return ops.broadcast_to(weights, (ops.shape(inputs)[0], 3))

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], 3)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "soft_only_steps": self.soft_only_steps,
                "sampler_only_steps": self.sampler_only_steps,
            }
        )
        return config


def check_schedule_steps(soft_only_steps, sampler_only_steps):
    """Validates the two phase lengths; returns them as a tuple."""
    steps = (soft_only_steps, sampler_only_steps)
    for name, value in zip(("soft_only_steps", "sampler_only_steps"), steps):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(
                f"Argument `{name}` must be a non-negative integer. "
                f"Received: {name}={value!r}"
            )
    return steps
