"""Sums over the replicas of a `tf.distribute` step, for losses and models.

Under `tf.distribute` a loss is computed per replica and the replicas'
gradients are summed. A loss term written by hand (not through a
`keras.losses.Loss`) must therefore be divided by the number of replicas
(`scale_for_replicas`), and a statistic over the batch must be taken over
the global batch (`replica_sum`), or the result depends on the number of
devices. On jax (where the step sees the global batch), on torch, and with
one replica, both return their input unchanged.

These two functions are all that losses and models need from distributed
training; the strategies themselves live in `keras_attention.training`,
which the numerical core never imports.
"""

import keras
from keras import ops

from keras_attention.utils.optional import import_optional


def replica_sum(value):
    """Sums `value` over the replicas of a `tf.distribute` step.

    Inside a replica of a tensorflow strategy with several replicas, an
    all-reduce; elsewhere (one replica, jax, torch) `value` itself. Use it
    for batch statistics that must cover the global batch.

    Args:
        value: a tensor.

    Returns:
        A tensor of the same shape and dtype.
    """
    if keras.backend.backend() != "tensorflow":
        return value
    tf = import_optional("tensorflow", "tensorflow", "replica_sum")

    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def scale_for_replicas(loss):
    """Divides a per-replica mean loss by the replicas in sync.

    `tf.distribute` sums the replicas' gradients, so a loss averaged over
    the local batch must be divided by the number of replicas to give the
    gradient of the mean over the global batch (what `keras.losses.Loss`
    does for compiled losses). Identity on jax and torch, and with one
    replica.

    Args:
        loss: a scalar tensor.

    Returns:
        A scalar tensor of the same dtype.
    """
    if keras.backend.backend() != "tensorflow":
        return loss
    tf = import_optional("tensorflow", "tensorflow", "scale_for_replicas")

    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if replicas == 1:
        return loss
    return loss * ops.cast(1.0 / replicas, loss.dtype)
