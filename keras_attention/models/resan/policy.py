"""ReSAN's policy gradient: rewards, the REINFORCE loss, the samplers'
optimizer and their rule at inference.

The token samplers are trained by REINFORCE on a reward that combines the
example's task cost and the sentence's selection percentage
(`policy_reward`); `policy_gradient_loss` is the surrogate whose gradient
is the policy gradient estimate. `with_sampler_optimizer` gives the
samplers an optimizer of their own, as the authors' code does.
"""

import contextlib

import keras
from keras import ops

from keras_attention.layers.reinforced_sequence_sampler import INFERENCE_RULES
from keras_attention.layers.reinforced_sequence_sampler import (
    ReinforcedSequenceSampler,
)
from keras_attention.ops.replicas import replica_sum
from keras_attention.optimizers import GroupSkippingOptimizer
from keras_attention.utils.validation import check_choice


def policy_reward(cost, percentage, sparsity_penalty):
    """The authors' reward of each sentence `(B, 2)`.

    ```
    reward[i, j] = -(cost[i] + sparsity_penalty * percentage[i, j])
    ```

    Args:
        cost: `(B,)` task cost of each example.
        percentage: `(B, 2)` selection percentage of each sentence
            (`selection_percentage`).
        sparsity_penalty: float. `lambda`.

    Returns:
        A float32 tensor `(B, 2)`, without gradient.
    """
    cost = ops.cast(cost, "float32")
    percentage = ops.cast(percentage, "float32")
    reward = -(ops.expand_dims(cost, -1) + sparsity_penalty * percentage)
    return ops.stop_gradient(reward)


BASELINES = ("leave_one_out", "none")


def policy_gradient_loss(reward, log_prob, baseline="leave_one_out"):
    """REINFORCE surrogate, with a leave-one-out batch-mean baseline or none.

    `reward` and `log_prob` are `(B,)` or `(B, J)` (one column per
    sentence). The gradient is `-mean_i(sum_j (r_ij - b_ij) grad
    log_prob_ij)`, the policy gradient estimate.

    ```
    baseline="leave_one_out":  b_ij = mean of column j's rewards over the
                               other examples of the batch
    baseline="none":           b_ij = 0 (the authors' code)
    ```

    The leave-one-out baseline needs no state and so behaves the same on
    every backend; it does not depend on example `i`'s own draw, so the
    estimate stays unbiased. Under `tf.distribute` it covers the global
    batch (the rewards are summed over the replicas), so it does not
    depend on the number of devices. docs/resan.md (section 8) has the
    two measured side by side.

    Args:
        reward: `(B,)` or `(B, J)` rewards; no gradient is taken through
            them.
        log_prob: the same shape: log-probabilities of the samplers'
            selections.
        baseline: `"leave_one_out"` or `"none"`. Defaults to
            `"leave_one_out"`.

    Returns:
        A float32 scalar.
    """
    check_choice("baseline", baseline, BASELINES)
    reward = ops.stop_gradient(ops.cast(reward, "float32"))
    log_prob = ops.cast(log_prob, "float32")
    if len(reward.shape) == 1:
        reward, log_prob = reward[:, None], log_prob[:, None]
    advantage = reward
    if baseline == "leave_one_out":
        count = ops.cast(ops.shape(reward)[0], "float32")
        total = replica_sum(
            ops.concatenate([ops.sum(reward, axis=0), ops.stack([count])], 0)
        )
        others = (total[:-1] - reward) / ops.maximum(total[-1] - 1.0, 1.0)
        advantage = reward - others
    return -ops.mean(ops.sum(advantage * log_prob, axis=-1))


# The variables of every layer whose name ends in "sampler", at any depth:
# "head_sampler/keep_dense/bias", "forward_attention/head_sampler/...".
SAMPLER_VARIABLES = r"(.*/)?[^/]*sampler/.*"


def authors_sampler_optimizer(learning_rate=0.5):
    """The optimizer the authors' code gives the samplers: Adadelta with
    `tf.compat.v1`'s rho 0.95 and epsilon 1e-8 (Keras's default epsilon is
    1e-7).

    Args:
        learning_rate: float. Defaults to the authors' `0.5`.

    Returns:
        A new `keras.optimizers.Adadelta`, for `with_sampler_optimizer`.
    """
    return keras.optimizers.Adadelta(learning_rate, rho=0.95, epsilon=1e-8)


def with_sampler_optimizer(optimizer, sampler_optimizer=None):
    """The authors' two optimizers: one for the samplers, one for the rest.

    The samplers' only gradient is the REINFORCE term and the other
    variables' only gradient is the task loss (see `ReSANClassifier`), so
    splitting the variables splits the losses as the authors' `train_op_rl`
    (the `hard_network` variables) and `train_op_sl` (every other) do.
    Adam, for example, normalises away the small scale of the policy
    gradient; the authors' samplers take Adadelta's far smaller first steps.

    The two groups skip the steps of the `TrainingSchedule` phases that
    give their loss the weight 0 (`optimizers.GroupSkippingOptimizer`):
    in the samplers-only phase the soft network's optimizer takes no step,
    as the authors' `train_op_sl` is not run then. With one optimizer for
    every variable, Adam's moments would keep moving the soft network
    through that phase on a zero gradient.

    ```python
    model.compile(optimizer=models.resan.with_sampler_optimizer(
        keras.optimizers.Adam(1e-3),
        models.resan.authors_sampler_optimizer(),  # Adadelta(0.5)
    ))
    ```

    Args:
        optimizer: a `keras.optimizers.Optimizer` for every variable but
            the samplers'.
        sampler_optimizer: another one, for the variables of the layers
            named `*sampler` (`SAMPLER_VARIABLES`). Defaults to `None`: a
            new optimizer with `optimizer`'s config (in joint training the
            same updates as `optimizer` alone for every variable).

    Returns:
        An `optimizers.GroupSkippingOptimizer` (a
        `keras.optimizers.MultiOptimizer`), serializable with the model.
    """
    for name, value in (
        ("optimizer", optimizer),
        ("sampler_optimizer", sampler_optimizer),
    ):
        if name == "sampler_optimizer" and value is None:
            continue
        if not isinstance(value, keras.optimizers.Optimizer):
            raise TypeError(
                f"Argument `{name}` must be a `keras.optimizers.Optimizer`. "
                f"Received: {name}={value!r}"
            )
    if optimizer is sampler_optimizer:
        raise ValueError(
            "Arguments `optimizer` and `sampler_optimizer` must be two "
            f"optimizers. Received the same object twice: {optimizer!r}"
        )
    if sampler_optimizer is None:
        sampler_optimizer = type(optimizer).from_config(optimizer.get_config())
    return GroupSkippingOptimizer(
        keras.optimizers.OptimizerMap(
            optimizer, {SAMPLER_VARIABLES: sampler_optimizer}
        )
    )


@contextlib.contextmanager
def sampler_inference(model, rule):
    """Inside the block, `model`'s samplers select by `rule` at inference.

    ```python
    with models.resan.sampler_inference(model, "sample"):
        sampled = model.predict(x)    # the authors' rule: draw at inference
    ```

    Sets the `inference` rule of every `ReinforcedSequenceSampler` in
    `model`, at any depth, and drops the model's traced predict and
    evaluate functions so that the next call traces with the rule (a traced
    function keeps the rule it was traced with); both are undone when the
    block ends. The rest of the model stays in inference mode (no dropout).

    Args:
        model: a `keras.Model` with at least one sampler.
        rule: `"threshold"`, `"sample"` or `"all"` (see
            `ReinforcedSequenceSampler`).

    Yields:
        `model`.
    """
    check_choice("rule", rule, INFERENCE_RULES)
    samplers = [
        layer
        for layer in model._flatten_layers(include_self=False)
        if isinstance(layer, ReinforcedSequenceSampler)
    ]
    if not samplers:
        raise ValueError(
            "Argument `model` must contain a ReinforcedSequenceSampler. "
            f"Received: model={model.name!r} without one"
        )
    own = [sampler.inference for sampler in samplers]

    def use(rules):
        for sampler, sampler_rule in zip(samplers, rules):
            sampler.inference = sampler_rule
        model.predict_function = None
        model.test_function = None

    use([rule] * len(samplers))
    try:
        yield model
    finally:
        use(own)
