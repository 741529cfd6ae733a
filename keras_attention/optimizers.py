"""Optimizers: variable groups that take no step without a gradient.

A loss weighted by a phase of training (ReSAN's samplers-only phase gives
the task loss the weight 0) leaves a group of variables with gradients
that are exactly zero, yet Adam, RMSprop or momentum SGD keep moving them
on their moments, and a moving average keeps pulling towards them. A
variable whose gradient is `None` is skipped by every Keras optimizer; a
weight of 0 is not `None` once the step is compiled, because the phase is
a tensor. `GroupSkippingOptimizer` makes it so: a group whose gradients
are all zero in a step keeps its variables and its optimizer's state
(moments, iteration count) exactly as they were, while its moving average
of the weights, if any, keeps following them.
"""

import keras
from keras import ops

from keras_attention.ops.replicas import replica_sum
from keras_attention.utils.optional import import_optional

__all__ = ["GroupSkippingOptimizer"]


@keras.saving.register_keras_serializable(package="keras_attention")
class GroupSkippingOptimizer(keras.optimizers.MultiOptimizer):
    """A `MultiOptimizer` whose groups skip the steps without a gradient.

    Each inner optimizer updates its own group of variables, as in
    `keras.optimizers.MultiOptimizer`. In a step where every gradient of a
    group is exactly zero (over all replicas), that group takes no step:
    its variables, its optimizer's slots and iteration count stay bit for
    bit as they were, as if its optimizer had not been called, which is
    what two separate training operations do in a TF1 program that runs
    only one of them. The other groups step as usual; the wrapper's own
    `iterations` counts every step.

    A moving average of the weights (`use_ema=True`) lives in the Keras
    optimizer but is not part of its step: in such a program it is an
    operation of its own (`tf.train.ExponentialMovingAverage`) that runs
    every step. So an idle group's average keeps moving towards the
    group's unchanged weights, by the optimizer's own rule: the weights
    themselves while the optimizer has not stepped yet, else
    `ema_momentum * average + (1 - ema_momentum) * weights`.

    The inner optimizers are applied as usual, and an idle group's state
    is selected back afterwards (`where`, without a branch), so the step
    compiles the same way on every backend, inside `jax.jit` and under
    `tf.distribute` too. That costs a copy of the group's variables and
    state per step.

    Example: the second step gives `a` no gradient, and Adam leaves it.

    >>> a = keras.Variable([1.0, 2.0], name="a")
    >>> b = keras.Variable([3.0], name="b")
    >>> optimizer = GroupSkippingOptimizer(
    ...     keras.optimizers.OptimizerMap(
    ...         keras.optimizers.Adam(0.1), {"b": keras.optimizers.Adam(0.1)}
    ...     )
    ... )
    >>> optimizer.apply([ops.ones((2,)), ops.ones((1,))], [a, b])
    >>> optimizer.apply([ops.zeros((2,)), ops.ones((1,))], [a, b])
    >>> print(np.round(ops.convert_to_numpy(a), 3))  # one step
    [0.9 1.9]
    >>> print(np.round(ops.convert_to_numpy(b), 3))  # two steps
    [2.8]

    Args:
        optimizer_map: a `keras.optimizers.OptimizerMap` (or a callable
            from a variable to its optimizer), as for `MultiOptimizer`.
        loss_scale_factor: as for `MultiOptimizer`.
        name: str. The optimizer's name.
    """

    def apply(self, grads, trainable_variables=None):
        if len(grads) == 0:
            return
        if trainable_variables is None:
            if not self.built:
                raise ValueError(
                    "Without `trainable_variables`, the optimizer must be "
                    "built first: call `optimizer.build(variables)`. "
                    f"Received: {len(grads)} gradients"
                )
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if not self.built:
            self.build(trainable_variables)
            self.built = True
        if len(grads) != len(trainable_variables):
            raise ValueError(
                "Arguments `grads` and `trainable_variables` must have one "
                f"gradient per variable. Received: {len(grads)} gradients "
                f"for {len(trainable_variables)} variables"
            )
        groups = {}
        for grad, variable in zip(grads, trainable_variables):
            index = self._var_to_optimizer_idx[self._var_key(variable)]
            groups.setdefault(index, []).append((grad, variable))
        for index, pairs in groups.items():
            _apply_unless_idle(self._inner_optimizers[index], pairs)
        self._iterations.assign_add(1)


def _apply_unless_idle(optimizer, pairs):
    pairs = [(grad, variable) for grad, variable in pairs if grad is not None]
    if not pairs:
        return  # no gradient at all: nothing to do, as Keras skips it
    grads, variables = (list(part) for part in zip(*pairs))
    state = variables + list(optimizer.variables)
    before = [ops.copy(variable.value) for variable in state]
    optimizer.apply(grads, variables)
    nonzero = ops.sum(
        ops.stack([ops.cast(_any_nonzero(grad), "float32") for grad in grads])
    )
    idle = ops.equal(replica_sum(nonzero), 0.0)
    kept = [
        ops.where(idle, old, variable.value)
        for variable, old in zip(state, before)
    ]
    _assign(state, kept)
    averages = getattr(optimizer, "_model_variables_moving_average", None)
    if optimizer.use_ema and averages:
        # Keras's rule, with the iteration count the step left as it was.
        first = ops.equal(optimizer.iterations, 0)
        momentum = ops.where(first, 0.0, optimizer.ema_momentum)
        pairs = [
            (weights, average)
            for weights, average in zip(
                optimizer._trainable_variables, averages
            )
            if average is not None
        ]
        followed = [
            ops.where(
                idle,
                ops.cast(momentum, average.dtype) * average.value
                + ops.cast(1.0 - momentum, average.dtype) * weights.value,
                average.value,
            )
            for weights, average in pairs
        ]
        _assign([average for _, average in pairs], followed)


def _any_nonzero(grad):
    if keras.backend.backend() == "tensorflow":
        tf = import_optional("tensorflow", "tensorflow", "Moving averages")
        if isinstance(grad, tf.IndexedSlices):
            grad = grad.values  # the rows an embedding lookup touched
    return ops.any(ops.not_equal(grad, ops.zeros((), grad.dtype)))


def _assign(variables, values):
    if keras.backend.backend() != "tensorflow":
        for variable, value in zip(variables, values):
            variable.assign(value)
        return
    tf = import_optional("tensorflow", "tensorflow", "Moving averages")

    # Under `tf.distribute`, a mirrored variable is assigned per device in
    # a cross-replica context, as Keras's optimizers assign theirs; with
    # the default strategy this is a plain assignment.
    def assign_all(strategy, variables, values):
        for variable, value in zip(variables, values):
            strategy.extended.update(
                variable.value,
                lambda target, new: target.assign(new),
                args=(value,),
                group=False,
            )

    tf.__internal__.distribute.interim.maybe_merge_call(
        assign_all, tf.distribute.get_strategy(), variables, values
    )
