"""Learning-rate schedules."""

import keras
from keras import ops

from keras_attention.utils.validation import check_positive_int

__all__ = ["NoamSchedule"]


@keras.saving.register_keras_serializable(package="keras_attention")
class NoamSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up, then inverse-square-root decay (section 5.3).

    ```
    lr(step) = scale * d_model ** -0.5
               * min(step ** -0.5, step * warmup_steps ** -1.5)
    ```

    Steps count from 1: the optimizer's first update (its iteration 0) uses
    `lr(1)`, so no update is wasted on a zero learning rate. The peak,
    `scale * (d_model * warmup_steps) ** -0.5`, is reached at
    `step = warmup_steps`.

    Args:
        d_model: int. Model width.
        warmup_steps: int. Defaults to `4000`.
        scale: float. Multiplies the rate. Defaults to `1.0` (the paper).

    Example:

    >>> schedule = NoamSchedule(d_model=512, warmup_steps=4000)
    >>> round(float(schedule(3999)), 7)  # the peak, at step 4000
    0.0006988

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          section 5.3, equation 3.
    """

    def __init__(self, d_model, warmup_steps=4000, scale=1.0):
        check_positive_int("d_model", d_model)
        check_positive_int("warmup_steps", warmup_steps)
        if not isinstance(scale, (int, float)) or scale <= 0:
            raise ValueError(
                f"Argument `scale` must be a positive number. "
                f"Received: scale={scale!r}"
            )
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.scale = scale

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0
        decay = ops.rsqrt(step)
        warmup = step * float(self.warmup_steps) ** -1.5
        return (
            float(self.scale)
            * float(self.d_model) ** -0.5
            * ops.minimum(decay, warmup)
        )

    def get_config(self):
        return {
            "d_model": self.d_model,
            "warmup_steps": self.warmup_steps,
            "scale": self.scale,
        }
