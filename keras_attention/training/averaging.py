"""Evaluating with the optimizer's moving average of the weights.

A Keras optimizer built with `use_ema=True` keeps an exponential moving
average of every trainable variable (Polyak averaging; the authors of
ReSAN evaluate with one of momentum 0.999). `moving_average_weights`
puts those averages into the model for the length of a `with` block and
restores the trained weights after it, so a callback can evaluate, and
save, the averaged model in the middle of `fit` without disturbing
training:

```python
optimizer = keras.optimizers.Adam(1e-3, use_ema=True, ema_momentum=0.999)
...
with training.moving_average_weights(model):
    scores = model.predict(x_dev)
```

Keras's own `keras.callbacks.SwapEMAWeights` swaps around `evaluate`
and at epoch ends; this is the same exchange for any code, including a
`predict` inside a callback.
"""

import contextlib

import keras
from keras import ops


def base_optimizer(optimizer):
    """The optimizer inside a `LossScaleOptimizer`, or `optimizer`."""
    return getattr(optimizer, "inner_optimizer", optimizer)


def _updating_optimizers(optimizer):
    # The optimizers that update variables: a `MultiOptimizer`'s inner
    # ones (each keeps the average of its own variables), or the one.
    optimizer = base_optimizer(optimizer)
    if isinstance(optimizer, keras.optimizers.MultiOptimizer):
        return list(optimizer.optimizers)
    return [optimizer]


def uses_moving_average(model):
    """Whether `model` is compiled with an optimizer that has `use_ema`
    (in a `MultiOptimizer`: any of its inner optimizers)."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return False
    return any(
        getattr(inner, "use_ema", False)
        for inner in _updating_optimizers(optimizer)
    )


def _pairs(optimizer):
    # Built by each optimizer's first step; before it there is nothing to
    # exchange.
    pairs = []
    for inner in _updating_optimizers(optimizer):
        averages = getattr(inner, "_model_variables_moving_average", None)
        if averages:
            pairs += zip(inner._trainable_variables, averages)
    return pairs


def _exchange(pairs):
    for variable, average in pairs:
        trained = ops.convert_to_numpy(variable)
        variable.assign(ops.convert_to_numpy(average))
        average.assign(trained)


@contextlib.contextmanager
def moving_average_weights(model):
    """Inside the block, `model` holds its optimizer's moving averages.

    Does nothing when the optimizer keeps no average (`use_ema=False`) or
    has not taken a step yet. The trained weights come back when the block
    ends, also after an exception.

    Args:
        model: a compiled `keras.Model`.

    Yields:
        `True` when the averages are in the model, else `False`.
    """
    if not uses_moving_average(model):
        yield False
        return
    pairs = _pairs(model.optimizer)
    if not pairs:
        yield False
        return
    _exchange(pairs)
    try:
        yield True
    finally:
        _exchange(pairs)


def with_moving_average(optimizer, momentum):
    """`optimizer` keeping a moving average of momentum `momentum`.

    Args:
        optimizer: a `keras.optimizers.Optimizer`, not yet built; a
            `MultiOptimizer` built on a `keras.optimizers.OptimizerMap`
            gets the average in each of its optimizers.
        momentum: float in `[0, 1)`; `0` or `None` keeps no average and
            returns `optimizer` unchanged.

    Returns:
        The optimizer, rebuilt from its config with `use_ema=True`.
    """
    if not momentum:
        return optimizer
    if isinstance(momentum, bool) or not 0.0 < momentum < 1.0:
        raise ValueError(
            "Argument `momentum` must be a float in [0, 1). "
            f"Received: momentum={momentum!r}"
        )
    if isinstance(optimizer, keras.optimizers.MultiOptimizer):
        return _multi_with_moving_average(optimizer, momentum)
    config = optimizer.get_config()
    config.update({"use_ema": True, "ema_momentum": float(momentum)})
    return type(optimizer).from_config(config)


def _multi_with_moving_average(optimizer, momentum):
    mapping = optimizer._optimizer_map
    if not isinstance(mapping, keras.optimizers.OptimizerMap):
        raise ValueError(
            "Argument `optimizer` must be a `MultiOptimizer` built on a "
            "`keras.optimizers.OptimizerMap` to get a moving average; give "
            "its inner optimizers `use_ema=True` instead. Received: "
            f"optimizer={optimizer!r} mapping variables with {mapping!r}"
        )
    rebuilt = {}  # one rebuilt optimizer per inner one, shared as before

    def average(inner):
        if id(inner) not in rebuilt:
            rebuilt[id(inner)] = with_moving_average(inner, momentum)
        return rebuilt[id(inner)]

    # The same class: a `GroupSkippingOptimizer` stays one.
    return type(optimizer)(
        keras.optimizers.OptimizerMap(
            average(mapping.default_optimizer),
            {key: average(mapping[key]) for key in mapping},
        ),
        loss_scale_factor=optimizer.loss_scale_factor,
        name=optimizer.name,
    )


__all__ = [
    "base_optimizer",
    "moving_average_weights",
    "uses_moving_average",
    "with_moving_average",
]
