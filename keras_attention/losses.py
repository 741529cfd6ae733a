"""Losses for sequence models: label-smoothed sparse cross-entropy and
R-Drop's consistency term."""

import math

import keras
from keras import ops

from keras_attention.ops.replicas import replica_sum
from keras_attention.utils.validation import check_dims
from keras_attention.utils.validation import check_rate
from keras_attention.utils.validation import static_shape

__all__ = [
    "LabelSmoothedSparseCategoricalCrossentropy",
    "RDropLoss",
    "label_smoothed_cross_entropy",
    "r_drop_divergence",
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


@keras.saving.register_keras_serializable(package="keras_attention")
class RDropLoss(keras.losses.Loss):
    """R-Drop: a loss on two dropout passes and the divergence between them.

    Wraps the loss of a sequence model (`loss`, for example
    `LabelSmoothedSparseCategoricalCrossentropy`). Called on its own it is
    `loss`: evaluation, and models that know nothing of it, see the
    wrapped loss. During `fit`, the `Transformer` and
    `TransformerLanguageModel` of this package see the wrapper in their
    `compute_loss`, run the model a second time on the batch (other
    dropout masks: the second pass draws from the same seed generators,
    which have moved on) and train with

    ```
    loss(concat(y, y), concat(logits_1, logits_2))       # both passes
      + alpha * mean(r_drop_divergence(y, logits_1, logits_2))
    ```

    the mean over the real (non-padding) target tokens; with the
    token-averaged `LabelSmoothedSparseCategoricalCrossentropy` that is
    the paper's loss divided by 2. The work of a training step doubles
    (two forward and backward passes). `alpha=0` trains exactly as
    `loss` alone, without the second pass. Sample weights weight the
    cross-entropy only.

    Args:
        loss: a `keras.losses.Loss` (or its name or config) on
            `(y_true, logits)`.
        alpha: float >= 0. Weight of the symmetric KL divergence (the
            paper's `alpha`; 0.3 to 5 in its translation experiments).
            Defaults to `1.0`.
        ignore_index: int or `None`. Label id of padding, where the
            divergence is not counted. Defaults to `0`.
        name: str. Defaults to `"r_drop"`.

    Example:

    ```python
    model.compile(
        optimizer="adam",
        loss=RDropLoss(LabelSmoothedSparseCategoricalCrossentropy(), 0.5),
    )
    ```

    References:
        - [Liang et al., 2021](https://arxiv.org/abs/2106.14448).
    """

    def __init__(
        self, loss, alpha=1.0, ignore_index=0, name="r_drop", **kwargs
    ):
        if (
            isinstance(alpha, bool)
            or not isinstance(alpha, (int, float))
            or not math.isfinite(alpha)
            or alpha < 0
        ):
            raise ValueError(
                "Argument `alpha` must be a finite number >= 0. Received: "
                f"alpha={alpha!r}"
            )
        super().__init__(name=name, **kwargs)
        self.loss = keras.losses.get(loss)
        if not callable(self.loss):
            raise ValueError(
                f"Argument `loss` must be a Keras loss. Received: loss={loss!r}"
            )
        self.alpha = alpha
        self.ignore_index = ignore_index

    def __call__(self, y_true, y_pred, sample_weight=None):
        return self.loss(y_true, y_pred, sample_weight=sample_weight)

    def call(self, y_true, y_pred):
        return self.loss.call(y_true, y_pred)

    def two_pass_loss(self, compute_loss, y, logits_1, logits_2, sample_weight):
        """The R-Drop loss of two passes; `compute_loss(y, logits,
        sample_weight)` is the model's usual loss (with its regularizers)."""
        # Both passes as one batch of 2B: (2B, T) and (2B, T, V).
        both = ops.concatenate([logits_1, logits_2], axis=0)
        labels = ops.concatenate([y, y], axis=0)
        if sample_weight is not None:
            sample_weight = ops.concatenate([sample_weight] * 2, axis=0)
        loss = compute_loss(labels, both, sample_weight)
        divergence = r_drop_divergence(
            y, logits_1, logits_2, self.ignore_index, rescale=True
        )
        return loss + self.alpha * ops.mean(divergence)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "loss": keras.losses.serialize(self.loss),
                "alpha": self.alpha,
                "ignore_index": self.ignore_index,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["loss"] = keras.losses.deserialize(config["loss"])
        return cls(**config)


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


def r_drop_divergence(
    y_true, logits_1, logits_2, ignore_index=0, rescale=False
):
    """Per-token symmetric KL divergence of two passes' distributions: the
    consistency term of R-Drop.

    R-Drop (Liang et al., 2021) runs the model twice on the same batch, so
    that the two passes drop different units, and adds to the two passes'
    cross-entropy the symmetric KL divergence between their output
    distributions:

    ```
    p, q  = softmax(logits_1), softmax(logits_2)             # (..., V)
    value = (KL(p || q) + KL(q || p)) / 2                     # (...)
          = sum((p - q) * (log p - log q), axis=-1) / 2
    ```

    Both passes receive gradients (neither side is held constant), as in
    the paper's implementation. `Transformer.compile(r_drop=alpha)`
    trains with `mean(cross_entropy of both passes) + alpha * mean(value)`
    over the real target tokens, which is the paper's loss divided by 2.

    Args:
        y_true: int tensor `(...)` of label ids; only its padding matters.
        logits_1: float tensor `(..., V)`, the first pass.
        logits_2: float tensor `(..., V)`, the second pass.
        ignore_index: int or `None`. Label id whose positions give zero.
        rescale: bool. Multiply by `size / number of kept positions`, so
            that a plain mean over all positions is the mean over the kept
            ones (summed over `tf.distribute` replicas, as in
            `label_smoothed_cross_entropy`).

    Returns:
        float32 tensor shaped like `y_true`.

    References:
        - [Liang et al., 2021](https://arxiv.org/abs/2106.14448), equations
          (1) to (3).
    """
    log_p = ops.log_softmax(ops.cast(logits_1, "float32"), axis=-1)
    log_q = ops.log_softmax(ops.cast(logits_2, "float32"), axis=-1)
    # (..., V) -> (...)
    value = 0.5 * ops.sum(
        (ops.exp(log_p) - ops.exp(log_q)) * (log_p - log_q), axis=-1
    )
    if ignore_index is None:
        return value
    keep = ops.cast(
        ops.not_equal(ops.cast(y_true, "int32"), ignore_index), "float32"
    )
    value = value * keep
    if rescale:
        total = replica_sum(ops.cast(ops.size(keep), "float32"))
        kept = replica_sum(ops.sum(keep))
        value = value * (total / ops.maximum(kept, 1.0))
    return value
