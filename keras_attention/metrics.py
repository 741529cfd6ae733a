"""Metrics for sequence models that ignore padding."""

import keras
from keras import ops

from keras_attention.losses import label_smoothed_cross_entropy

__all__ = ["MaskedAccuracy", "Perplexity"]


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedAccuracy(keras.metrics.Metric):
    """Token accuracy over positions whose label is not `ignore_index`.

    ```
    accuracy = sum(argmax(logits) == y_true and y_true != pad) / sum(y != pad)
    ```

    Args:
        ignore_index: int. Padding label id. Defaults to `0`.
        name: str. Defaults to `"accuracy"`.
    """

    def __init__(self, ignore_index=0, name="accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.ignore_index = ignore_index
        self.correct = self.add_variable((), "zeros", name="correct")
        self.count = self.add_variable((), "zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        keep = ops.not_equal(y_true, self.ignore_index)
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        hit = ops.logical_and(keep, ops.equal(predicted, y_true))
        self.correct.assign_add(ops.sum(ops.cast(hit, self.dtype)))
        self.count.assign_add(ops.sum(ops.cast(keep, self.dtype)))

    def result(self):
        return self.correct / ops.maximum(self.count, 1.0)

    def reset_state(self):
        self.correct.assign(0.0)
        self.count.assign(0.0)

    def get_config(self):
        return {"ignore_index": self.ignore_index, **super().get_config()}


@keras.saving.register_keras_serializable(package="keras_attention")
class Perplexity(keras.metrics.Metric):
    """`exp` of the mean cross-entropy (no smoothing) over real tokens.

    Args:
        ignore_index: int. Padding label id. Defaults to `0`.
        name: str. Defaults to `"perplexity"`.
    """

    def __init__(self, ignore_index=0, name="perplexity", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.ignore_index = ignore_index
        self.total = self.add_variable((), "zeros", name="total")
        self.count = self.add_variable((), "zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        nll = label_smoothed_cross_entropy(
            y_true, y_pred, epsilon=0.0, ignore_index=self.ignore_index
        )
        keep = ops.not_equal(ops.cast(y_true, "int32"), self.ignore_index)
        self.total.assign_add(ops.cast(ops.sum(nll), self.dtype))
        self.count.assign_add(ops.sum(ops.cast(keep, self.dtype)))

    def result(self):
        return ops.exp(self.total / ops.maximum(self.count, 1.0))

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)

    def get_config(self):
        return {"ignore_index": self.ignore_index, **super().get_config()}
