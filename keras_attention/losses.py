"""Losses: label-smoothed sparse cross-entropy for sequence models."""

import keras
from keras import ops

from keras_attention.ops.replicas import replica_sum
from keras_attention.utils.validation import check_dims
from keras_attention.utils.validation import check_rate
from keras_attention.utils.validation import static_shape

__all__ = [
    "LabelSmoothedSparseCategoricalCrossentropy",
    "label_smoothed_cross_entropy",
]


@keras.saving.register_keras_serializable(package="keras_attention")
class LabelSmoothedSparseCategoricalCrossentropy(keras.losses.Loss):
    """Cross-entropy against label-smoothed targets given as integer ids.

    With `V` classes, the target distribution puts `1 - epsilon` on the true
    id and spreads `epsilon` uniformly over all `V` ids (section 5.4 of the
    paper, `epsilon_ls = 0.1`). The loss is computed from the log-softmax
    without building a one-hot over the vocabulary:

    ```
    log_probs = log_softmax(logits)                      # (B, T, V)
    nll       = -log_probs[b, t, y_true[b, t]]           # (B, T)
    smooth    = -mean(log_probs, axis=-1)                # (B, T)
    loss      = (1 - epsilon) * nll + epsilon * smooth
    ```

    Positions whose label is `ignore_index` (padding) contribute nothing,
    and the default reduction averages over the remaining tokens only
    (the per-token values are rescaled by `total / real`, the same rescaling
    Keras applies to masked losses). The logits are upcast to float32.

    Args:
        epsilon: float in `[0, 1)`. Label smoothing. Defaults to `0.1`.
        ignore_index: int or `None`. Label id that marks padding. Defaults
            to `0`.
        from_logits: bool. Must be `True`: the loss works on logits.
        reduction: Keras loss reduction. Defaults to
            `"sum_over_batch_size"`.
        name: str. Defaults to
            `"label_smoothed_sparse_categorical_crossentropy"`.

    Example:

    >>> loss = LabelSmoothedSparseCategoricalCrossentropy(epsilon=0.1)
    >>> logits = keras.ops.zeros((2, 3, 5))
    >>> labels = keras.ops.array([[1, 2, 0], [3, 0, 0]])
    >>> round(float(loss(labels, logits)), 4)  # log(5): uniform logits
    1.6094

    References:
        - [Szegedy et al., 2016](https://arxiv.org/abs/1512.00567),
          section 7 (label smoothing).
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          section 5.4.
    """

    def __init__(
        self,
        epsilon=0.1,
        ignore_index=0,
        from_logits=True,
        reduction="sum_over_batch_size",
        name="label_smoothed_sparse_categorical_crossentropy",
        dtype=None,
    ):
        check_rate("epsilon", epsilon)
        if not from_logits:
            raise ValueError(
                "LabelSmoothedSparseCategoricalCrossentropy works on logits. "
                f"Received: from_logits={from_logits!r}"
            )
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.epsilon = epsilon
        self.ignore_index = ignore_index
        self.from_logits = from_logits

    def call(self, y_true, y_pred):
        logits_shape = static_shape(y_pred)
        if logits_shape is not None:
            check_dims(
                "y_true",
                static_shape(y_true),
                logits_shape[:-1],
                f"{logits_shape[:-1]} (the logits' shape without the last "
                "axis)",
            )
        return label_smoothed_cross_entropy(
            y_true, y_pred, self.epsilon, self.ignore_index, rescale=True
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "epsilon": self.epsilon,
                "ignore_index": self.ignore_index,
                "from_logits": self.from_logits,
            }
        )
        return config


def label_smoothed_cross_entropy(
    y_true, logits, epsilon=0.1, ignore_index=0, rescale=False
):
    """Per-token label-smoothed cross-entropy, zero where ignored.

    Args:
        y_true: int tensor `(...)` of label ids.
        logits: float tensor `(..., V)`.
        epsilon: float. Label smoothing.
        ignore_index: int or `None`. Label id whose positions give zero.
        rescale: bool. Multiply by `size / number of kept positions`, so that
            a plain mean over all positions is the mean over kept ones.
            Inside a `tf.distribute` replica both counts are summed over
            the replicas, so the replicas' losses together average over
            the real tokens of the global batch, however unevenly the
            padding falls between them.

    Returns:
        float32 tensor shaped like `y_true`.
    """
    y_true = ops.cast(y_true, "int32")
    logits = ops.cast(logits, "float32")
    log_probs = ops.log_softmax(logits, axis=-1)  # (..., V)
    # (...) -> (..., 1) -> (...)
    picked = ops.take_along_axis(
        log_probs, ops.expand_dims(y_true, -1), axis=-1
    )
    nll = -ops.squeeze(picked, -1)
    if epsilon:
        smooth = -ops.mean(log_probs, axis=-1)
        loss = (1.0 - epsilon) * nll + epsilon * smooth
    else:
        loss = nll
    if ignore_index is None:
        return loss
    keep = ops.cast(ops.not_equal(y_true, ignore_index), "float32")
    loss = loss * keep
    if rescale:
        total = replica_sum(ops.cast(ops.size(keep), "float32"))
        kept = replica_sum(ops.sum(keep))
        loss = loss * (total / ops.maximum(kept, 1.0))
    return loss
