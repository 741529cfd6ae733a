"""ReSAN: the reinforced self-attention network and its sentence-pair heads.

The encoder maps token ids to a sentence vector with forward and backward
`ReinforcedSelfAttention` and `Source2TokenAttention` pooling. The two heads
(`ReSANClassifier` for NLI, `ReSANRelatedness` for SICK relatedness) are
`keras.Model` subclasses whose `compute_loss` adds the policy-gradient
(REINFORCE) loss of the token samplers to the supervised loss, so plain
`model.fit` trains everything on tensorflow, jax and torch.
"""

import contextlib
import math
import re

import keras
from keras import ops

from keras_attention.layers.reinforced_self_attention import EMPTY_CONTEXTS
from keras_attention.layers.reinforced_self_attention import (
    ReinforcedSelfAttention,
)
from keras_attention.layers.reinforced_sequence_sampler import INFERENCE_RULES
from keras_attention.layers.reinforced_sequence_sampler import (
    ReinforcedSequenceSampler,
)
from keras_attention.layers.source2_token_attention import Source2TokenAttention
from keras_attention.ops.replicas import replica_sum
from keras_attention.ops.replicas import scale_for_replicas
from keras_attention.optimizers import GroupSkippingOptimizer
from keras_attention.utils.seeds import sub_seed
from keras_attention.utils.validation import check_choice
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rate


def resan_encoder(
    vocabulary_size,
    embeddings=None,
    embedding_dim=300,
    hidden_dim=100,
    capacity=None,
    dropout=0.0,
    trainable_embeddings=False,
    seed=None,
    variant="authors",
    empty_context=None,
    sampler_keep_bias=0.0,
    name="resan_encoder",
):
    """Builds the ReSAN sentence encoder.

    ```
    e = word_embedding(ids)                              # (B, T, E)
    heads, log_p_h = head_sampler(stop_gradient(e))      # (B, T) bool
    dependents, log_p_d = dependent_sampler(stop_gradient(e))
    x_fw = elu(forward_projection(dropout(e)))           # (B, T, H)
    x_bw = elu(backward_projection(dropout(e)))          # (B, T, H)
    forward = ReSA("forward")(x_fw, heads, dependents)   # (B, T, H)
    backward = ReSA("backward")(x_bw, heads, dependents) # (B, T, H)
    sentence = Source2TokenAttention()([forward; backward])   # (B, 2H)
    log_prob = log_p_h + log_p_d                         # (B,)
    ```

    As in the authors' code (`SNLI_rl_pub/src/model/model_hw_resan.py`):
    one head and one dependent sampler shared by both directions, reading
    the word vectors, and a projection per direction.
    `variant="release_0_1"` builds release 0.1's encoder instead (one
    shared projection, four samplers reading it, ReLU samplers and the
    "mean" corner rule of `ReinforcedSelfAttention`); models saved by
    release 0.1 load as that variant.

    Masking: token id 0 is padding; it is never selected, gets zero weight
    in the pooling and never changes the sentence vector.

    Args:
        vocabulary_size: int. Rows of the embedding table.
        embeddings: optional `(vocabulary_size, embedding_dim)` array to
            initialize the word vectors (e.g. GloVe).
        embedding_dim: int. Word vector width; taken from `embeddings` when
            given. Defaults to `300`.
        hidden_dim: int. `H`. Defaults to `100`.
        capacity: float. Passed to both `ReinforcedSelfAttention` layers.
            Defaults to `None`.
        dropout: float. Dropout on the projected word vectors. Defaults to
            `0.0`.
        trainable_embeddings: bool. Defaults to `False`.
        seed: int. Seed of the samplers and dropout; each random consumer
            gets its own stream (`keras_attention.utils.seeds.sub_seed`).
            Defaults to `None`.
        variant: `"authors"` or `"release_0_1"` (see above). Defaults to
            `"authors"`.
        empty_context: the corner rule of both `ReinforcedSelfAttention`
            layers, `"authors"` or `"mean"`. Defaults to `None`: the
            variant's (`"authors"`; release 0.1's is `"mean"`, the only
            one it takes).
        sampler_keep_bias: float. Initial bias of the samplers' keep logit
            (the first keep probability is about `sigmoid` of it). Defaults
            to `0.0` (the authors' zero bias, probability 0.5); the
            authors' variant only.
        name: str. Defaults to `"resan_encoder"`.

    Returns:
        A `keras.Model` from int ids `(B, T)` to a dict: `"sentence"`
        `(B, 2H)`, `"log_prob"` `(B,)` (log-probability of the samplers'
        selections) and `"selection_percentage"` `(B,)` (the authors'
        percentage, `selection_percentage`; release 0.1's variant averages
        it over its two directions).

    Example:

    >>> encoder = resan_encoder(vocabulary_size=20, embedding_dim=6,
    ...                         hidden_dim=4, seed=1)
    >>> out = encoder(np.array([[3, 4, 5, 0]]))
    >>> keras.ops.shape(out["sentence"]), keras.ops.shape(out["log_prob"])
    ((1, 8), (1,))

    References:
        - [Shen et al., 2018, ReSAN](https://arxiv.org/abs/1801.10296),
          section 4.
    """
    initializer, embedding_dim = _checked_encoder_arguments(
        vocabulary_size, embeddings, embedding_dim, hidden_dim, dropout, variant
    )
    empty_context = _checked_selection_arguments(
        variant, empty_context, sampler_keep_bias
    )
    return _build_encoder(
        vocabulary_size,
        initializer,
        embedding_dim,
        hidden_dim,
        capacity,
        dropout,
        trainable_embeddings,
        seed,
        variant,
        name,
        select_all_input=False,
        empty_context=empty_context,
        sampler_keep_bias=sampler_keep_bias,
    )


def _checked_encoder_arguments(
    vocabulary_size, embeddings, embedding_dim, hidden_dim, dropout, variant
):
    """Validates; returns the embedding initializer and width."""
    check_positive_int("vocabulary_size", vocabulary_size)
    check_positive_int("hidden_dim", hidden_dim)
    check_rate("dropout", dropout)
    check_choice("variant", variant, VARIANTS)
    initializer = "uniform"
    if embeddings is not None:
        shape = tuple(ops.shape(embeddings))
        if len(shape) != 2 or shape[0] != vocabulary_size:
            raise ValueError(
                "Argument `embeddings` must have shape (vocabulary_size, "
                f"embedding_dim) = ({vocabulary_size}, ...). Received: "
                f"embeddings with shape {shape}"
            )
        embedding_dim = shape[1]
        initializer = keras.initializers.Constant(embeddings)
    check_positive_int("embedding_dim", embedding_dim)
    return initializer, embedding_dim


def _checked_weight_decay(weight_decay):
    if (
        isinstance(weight_decay, bool)
        or not isinstance(weight_decay, (int, float))
        or not math.isfinite(weight_decay)
        or weight_decay < 0
    ):
        raise ValueError(
            "Argument `weight_decay` must be a finite float >= 0. "
            f"Received: weight_decay={weight_decay!r}"
        )
    return float(weight_decay)


def _checked_selection_arguments(variant, empty_context, sampler_keep_bias):
    """Validates; returns the corner rule (the variant's when `None`)."""
    if empty_context is not None:
        check_choice("empty_context", empty_context, EMPTY_CONTEXTS)
    if (
        isinstance(sampler_keep_bias, bool)
        or not isinstance(sampler_keep_bias, (int, float))
        or not math.isfinite(sampler_keep_bias)
    ):
        raise ValueError(
            "Argument `sampler_keep_bias` must be a finite float. "
            f"Received: sampler_keep_bias={sampler_keep_bias!r}"
        )
    if variant == "release_0_1":
        if empty_context not in (None, "mean") or sampler_keep_bias:
            raise ValueError(
                "`variant='release_0_1'` has the \"mean\" corner rule and "
                "zero sampler biases. Received: "
                f"empty_context={empty_context!r}, "
                f"sampler_keep_bias={sampler_keep_bias!r}"
            )
        return "mean"
    return empty_context or "authors"


def _build_encoder(
    vocabulary_size,
    initializer,
    embedding_dim,
    hidden_dim,
    capacity,
    dropout,
    trainable_embeddings,
    seed,
    variant,
    name,
    select_all_input,
    empty_context="authors",
    sampler_keep_bias=0.0,
):
    # With `select_all_input`, a second input `(B,)` (1 = select every
    # real token, the soft-only phase of the training schedule).
    ids = keras.Input((None,), dtype="int32", name="token_ids")
    inputs = ids
    select_all = None
    if select_all_input:
        select_all = keras.Input((), dtype="float32", name="select_all")
        inputs = [ids, select_all]
    mask = ops.not_equal(ids, 0)  # (B, T)
    embedded = keras.layers.Embedding(
        vocabulary_size,
        embedding_dim,
        embeddings_initializer=initializer,
        trainable=trainable_embeddings,
        name="word_embedding",
    )(ids)
    if variant == "release_0_1":
        outputs, log_prob, percentage = _release_0_1_directions(
            embedded, mask, hidden_dim, capacity, dropout, seed
        )
    else:
        outputs, log_prob, percentage = _authors_directions(
            embedded,
            mask,
            hidden_dim,
            capacity,
            dropout,
            seed,
            select_all,
            empty_context,
            sampler_keep_bias,
        )
    sequence = ops.concatenate(outputs, axis=-1)  # (B, T, 2H)
    sentence = Source2TokenAttention(name="pooling")(sequence, mask=mask)
    return keras.Model(
        inputs,
        {
            "sentence": sentence,
            "log_prob": log_prob,
            "selection_percentage": percentage,
        },
        name=name,
    )


VARIANTS = ("authors", "release_0_1")


def _authors_directions(
    embedded,
    mask,
    hidden_dim,
    capacity,
    dropout,
    seed,
    select_all=None,
    empty_context="authors",
    sampler_keep_bias=0.0,
):
    # One head and one dependent sampler, shared by both directions, read
    # the word vectors (without gradient: theta_r learns from the policy
    # gradient only); each direction has its own ELU projection.
    sampler_inputs = ops.stop_gradient(embedded)
    selections, log_prob = [], 0.0
    for role in ("head", "dependent"):
        sampler = ReinforcedSequenceSampler(
            hidden_dim=hidden_dim,
            seed=sub_seed(seed, f"{role}_sampler"),
            name=f"{role}_sampler",
        )
        selection, role_log_prob = sampler(sampler_inputs, mask=mask)
        if sampler_keep_bias:
            # Only the keep logit's bias: the fusion layer keeps zeros.
            sampler.keep_dense.bias.assign([float(sampler_keep_bias)])
        selections.append(selection)
        log_prob = log_prob + role_log_prob
    heads, dependents = selections
    if select_all is not None:
        # The soft-only phase: every real token is a head and a dependent.
        everything = ops.greater(ops.expand_dims(select_all, -1), 0.5)
        heads = ops.where(everything, mask, heads)
        dependents = ops.where(everything, mask, dependents)
    outputs = []
    for direction in ("forward", "backward"):
        x = keras.layers.Dropout(
            dropout,
            seed=sub_seed(seed, f"{direction}_dropout"),
            name=f"{direction}_dropout",
        )(embedded)
        x = keras.layers.Dense(
            hidden_dim, activation="elu", name=f"{direction}_projection"
        )(x)
        outputs.append(
            ReinforcedSelfAttention(
                direction=direction,
                capacity=capacity,
                use_samplers=False,
                empty_context=empty_context,
                name=f"{direction}_attention",
            )(x, mask=mask, heads=heads, dependents=dependents)
        )
    return outputs, log_prob, selection_percentage(heads, dependents, mask)


def _release_0_1_directions(
    embedded, mask, hidden_dim, capacity, dropout, seed
):
    # Release 0.1: one shared projection, and a head and a dependent
    # sampler of its own in each direction (four in all).
    x = keras.layers.Dense(
        hidden_dim, activation="elu", name="input_projection"
    )(embedded)
    x = keras.layers.Dropout(
        dropout, seed=sub_seed(seed, "input_dropout"), name="input_dropout"
    )(x)
    outputs, log_prob, percentage = [], 0.0, 0.0
    for direction in ("forward", "backward"):
        out, heads, dependents, layer_log_prob = ReinforcedSelfAttention(
            direction=direction,
            capacity=capacity,
            seed=sub_seed(seed, f"{direction}_attention"),
            empty_context="mean",
            sampler_activation="relu",
            name=f"{direction}_attention",
        )(x, mask=mask, return_selections=True)
        outputs.append(out)
        log_prob = log_prob + layer_log_prob
        percentage = percentage + selection_percentage(heads, dependents, mask)
    return outputs, log_prob, 0.5 * percentage


def selection_percentage(heads, dependents, mask):
    """The authors' selection percentage of each sentence `(B,)`.

    ```
    percentage = (sum(heads) / sum(mask)) * (sum(dependents) / sum(mask))
    ```

    The fraction of the real token pairs `(t, s)` whose head `t` and
    dependent `s` are both selected: the sparsity term of ReSAN's reward.
    An all-padding row gives `0`.

    Args:
        heads: boolean `(B, T)`.
        dependents: boolean `(B, T)`.
        mask: boolean `(B, T)`, `True` = real token.

    Returns:
        A float32 tensor `(B,)`.
    """
    real = ops.maximum(_count(mask), 1.0)
    heads = ops.logical_and(heads, mask)
    dependents = ops.logical_and(dependents, mask)
    return (_count(heads) / real) * (_count(dependents) / real)


def relatedness_target(scores, num_classes=5):
    """The sparse target distribution of Tai et al. for scores in 1..K.

    A score `y` puts `floor(y) + 1 - y` on class `floor(y)` and
    `y - floor(y)` on class `floor(y) + 1` (classes are the scores
    `1..num_classes`), so the distribution's expectation is `y`.

    Args:
        scores: array `(B,)` of floats in `[1, num_classes]`.
        num_classes: int. Defaults to `5`.

    Returns:
        A float32 NumPy array `(B, num_classes)`.

    Raises:
        ValueError: If a score lies outside `[1, num_classes]`.

    Example:

    >>> target = relatedness_target(np.array([3.4]))
    >>> [round(float(p), 2) for p in target[0]]
    [0.0, 0.0, 0.6, 0.4, 0.0]

    References:
        - [Tai et al., 2015](https://arxiv.org/abs/1503.00075), section
          5.2.
    """
    import numpy as np

    scores = np.asarray(scores, dtype="float64").reshape(-1)
    bad = scores[(scores < 1) | (scores > num_classes) | ~np.isfinite(scores)]
    if bad.size:
        raise ValueError(
            f"Relatedness scores must lie in [1, {num_classes}]. "
            f"Received: scores={bad[:5].tolist()}"
        )
    floor = np.minimum(np.floor(scores), num_classes - 1)
    target = np.zeros((len(scores), num_classes), "float64")
    rows = np.arange(len(scores))
    target[rows, floor.astype(int) - 1] = floor + 1 - scores
    target[rows, floor.astype(int)] = scores - floor
    return target.astype("float32")


_CONFIG_KEYS = (
    "name",
    "vocabulary_size",
    "embedding_dim",
    "hidden_dim",
    "num_classes",
    "capacity",
    "dropout",
    "trainable_embeddings",
    "reward_weight",
    "sparsity_penalty",
    "variant",
    "empty_context",
    "sampler_keep_bias",
    "soft_only_steps",
    "sampler_only_steps",
    "weight_decay",
    "baseline",
    "seed",
)


class _ReinforcedPairModel(keras.Model):
    """Shared training logic: supervised loss plus REINFORCE.

    The model's outputs hold the task outputs and, for each of the two
    sentences, the samplers' `log_prob` `(B, 2)` and the selection
    percentage `(B, 2)` of the same forward pass; `compute_loss` receives
    them as `y_pred` and adds, in training, the authors' REINFORCE loss:

    ```
    cost_i = the example's task cost (cross-entropy, or 0.5 (s_hat - y)^2)
    reward_ij = -(cost_i + sparsity_penalty * percentage_ij)   # sentence j
    baseline_ij = mean of the other examples' rewards (leave-one-out),
                  or 0 with baseline="none" (the authors' code)
    loss += reward_weight
            * -mean_i(sum_j stop_gradient(reward_ij - baseline_ij)
                      * log_prob_ij)
    ```

    The samplers read their inputs through `stop_gradient`, and the
    selections are discrete, so the REINFORCE term reaches the samplers'
    variables only, and the task loss reaches every variable but theirs:
    the split of the authors' two optimizers (`hard_network` with the RL
    loss, the rest with the task loss), with one optimizer.
    """

    def _remember(self, encoder, arguments):
        # A public attribute per constructor argument, as in `get_config`.
        self.encoder = encoder
        self.embedding_dim = encoder.get_layer("word_embedding").output_dim
        for name in self._config_keys():
            if name not in ("name", "embedding_dim"):
                setattr(self, name, arguments[name])
        self.reward_weight = float(self.reward_weight)
        self.sparsity_penalty = float(self.sparsity_penalty)
        self.weight_decay = _checked_weight_decay(self.weight_decay)
        # Reported by `fit` and `evaluate` beside the task metrics, so a
        # collapse of the samplers shows in the epoch logs.
        self.selection_tracker = keras.metrics.Mean(name="selection_percentage")

    @classmethod
    def _config_keys(cls):
        return _CONFIG_KEYS

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        cost = self.task_cost(y, y_pred)  # (B,)
        if self.loss is None:
            # No compiled loss: the model's own task loss, and the layers'
            # added losses, if any.
            loss = scale_for_replicas(ops.mean(cost))
            for extra in self.losses:
                loss = loss + ops.cast(extra, "float32")
        else:
            loss = super().compute_loss(
                x=x,
                y=y,
                y_pred=y_pred["probabilities"],
                sample_weight=sample_weight,
                training=training,
            )
        task_weight = policy_weight = 1.0
        if training and "training_phase" in y_pred:
            # The schedule's weights of this step (the same in every row).
            task_weight = y_pred["training_phase"][0, 1]
            policy_weight = y_pred["training_phase"][0, 2]
            loss = task_weight * loss
        if training and self.weight_decay:
            # Each group's decay joins the loss that trains the group, so
            # the schedule's phases hold for it too. The same on every
            # replica: divided by their number, as the gradients are summed.
            soft, samplers = self.weight_decay_terms()
            loss = loss + task_weight * scale_for_replicas(soft)
            if self.reward_weight != 0.0:
                loss = loss + policy_weight * scale_for_replicas(samplers)
        if not training or self.reward_weight == 0.0:
            return loss
        reward = policy_reward(
            cost, y_pred["selection_percentage"], self.sparsity_penalty
        )
        # A mean over the local batch: divided by the replicas in sync, as
        # Keras does for compiled losses, since their gradients are summed.
        return loss + (
            policy_weight
            * self.reward_weight
            * scale_for_replicas(
                policy_gradient_loss(
                    reward, y_pred["log_prob"], baseline=self.baseline
                )
            )
        )

    def weight_decay_terms(self):
        """The authors' weight decay: `weight_decay * sum(v ** 2) / 2` over
        the trainable matrices (rank 2 or more; not biases, scales or the
        word embedding), as two float32 scalars: the soft network's, added
        to the task loss, and the samplers', added to the REINFORCE loss.
        """
        soft = samplers = ops.zeros((), "float32")
        for variable in self.trainable_variables:
            if len(variable.shape) < 2 or "word_embedding" in variable.path:
                continue
            value = ops.cast(variable.value, "float32")
            term = ops.sum(ops.square(value))
            if re.fullmatch(SAMPLER_VARIABLES, variable.path):
                samplers = samplers + term
            else:
                soft = soft + term
        half = 0.5 * self.weight_decay
        return half * soft, half * samplers

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        self.selection_tracker.update_state(
            ops.cast(y_pred["selection_percentage"], "float32")
        )
        return super().compute_metrics(
            x, y, y_pred["probabilities"], sample_weight
        )

    def get_config(self):
        return {name: getattr(self, name) for name in self._config_keys()}

    @classmethod
    def from_config(cls, config):
        # Files saved by release 0.1 have no `variant`: its encoder.
        return cls(**{"variant": "release_0_1", **config})


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


def _encode_pair(arguments, first, second):
    """Encodes both sentences with one encoder; returns the encoder, both
    outputs and the schedule tensor `(B, 3)` (`None` for release 0.1)."""
    variant = arguments["variant"]
    encoder_dropout = arguments.get("encoder_dropout")
    if encoder_dropout is None:
        encoder_dropout = arguments["dropout"]
    initializer, embedding_dim = _checked_encoder_arguments(
        arguments["vocabulary_size"],
        arguments["embeddings"],
        arguments["embedding_dim"],
        arguments["hidden_dim"],
        encoder_dropout,
        variant,
    )
    steps = arguments["soft_only_steps"], arguments["sampler_only_steps"]
    for name, value in zip(("soft_only_steps", "sampler_only_steps"), steps):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(
                f"Argument `{name}` must be a non-negative integer. "
                f"Received: {name}={value!r}"
            )
    if variant == "release_0_1" and any(steps):
        raise ValueError(
            "The training schedule needs `variant='authors'`. Received: "
            f"variant='release_0_1', soft_only_steps={steps[0]}, "
            f"sampler_only_steps={steps[1]}"
        )
    empty_context = _checked_selection_arguments(
        variant, arguments["empty_context"], arguments["sampler_keep_bias"]
    )
    # The authors' encoder takes the soft-only phase's "select all" flag
    # as a second input.
    scheduled = variant == "authors"
    encoder = _build_encoder(
        arguments["vocabulary_size"],
        initializer,
        embedding_dim,
        arguments["hidden_dim"],
        arguments["capacity"],
        encoder_dropout,
        arguments["trainable_embeddings"],
        arguments["seed"],
        variant,
        "resan_encoder",
        select_all_input=scheduled,
        empty_context=empty_context,
        sampler_keep_bias=arguments["sampler_keep_bias"],
    )
    if not scheduled:
        return encoder, encoder(first), encoder(second), None
    schedule = TrainingSchedule(*steps, name="training_schedule")(first)
    select_all = schedule[:, 0]
    return (
        encoder,
        encoder([first, select_all]),
        encoder([second, select_all]),
        schedule,
    )


def _pair_outputs(first, second, schedule=None, **task_outputs):
    # Per sentence, in columns: (B, 2).
    if schedule is not None:
        task_outputs["training_phase"] = schedule
    return {
        **task_outputs,
        "log_prob": ops.stack([first["log_prob"], second["log_prob"]], 1),
        "selection_percentage": ops.stack(
            [first["selection_percentage"], second["selection_percentage"]],
            axis=1,
        ),
    }


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


@keras.saving.register_keras_serializable(package="keras_attention")
class ReSANClassifier(_ReinforcedPairModel):
    """ReSAN for sentence-pair classification (NLI).

    One encoder is shared by premise and hypothesis:

    ```
    s_p, s_h = encoder(premise), encoder(hypothesis)          # (B, 2H)
    features = [s_p; s_h; s_p - s_h; s_p * s_h]               # (B, 8H)
    probabilities = softmax(W2 elu(W1 features + b1) + b2)    # (B, C)
    ```

    Training with `fit`: compile with a sparse categorical loss on the
    class ids (or with no loss: the model then uses its own cross-entropy).
    In training, `compute_loss` adds the REINFORCE loss of the token
    samplers with the authors' reward of each sentence: minus the
    example's cross-entropy, minus `sparsity_penalty` times the sentence's
    selection percentage (see `_ReinforcedPairModel`).

    Masking: id 0 is padding, on both inputs.

    Args:
        vocabulary_size: int.
        embeddings: optional initial word vectors
            `(vocabulary_size, embedding_dim)`; not stored in the config
            (the saved weights hold them).
        embedding_dim: int. Defaults to `300`.
        hidden_dim: int. `H`. Defaults to `100`.
        num_classes: int. Defaults to `3`.
        capacity: float. See `ReinforcedSelfAttention`. Defaults to `None`.
        dropout: float. Defaults to `0.1`.
        trainable_embeddings: bool. Defaults to `False`.
        reward_weight: float. Weight of the policy-gradient loss; `0`
            leaves the samplers untrained. Defaults to `1.0`.
        sparsity_penalty: float. `lambda`, the reward lost per unit of
            selection percentage. Defaults to `0.02` (the authors' SNLI
            value).
        variant: the encoder, `"authors"` or `"release_0_1"` (see
            `resan_encoder`). Defaults to `"authors"`; files saved by
            release 0.1 load as `"release_0_1"`.
        empty_context: the encoder's corner rule (see `resan_encoder`).
            Defaults to `None`, the variant's.
        sampler_keep_bias: float. Initial bias of the samplers' keep logit
            (see `resan_encoder`). Defaults to `0.0`.
        soft_only_steps: int. Training steps of the soft network alone,
            every real token selected (`TrainingSchedule`). Defaults to `0`.
        sampler_only_steps: int. Then steps of the samplers alone.
            Defaults to `0`.
        weight_decay: float. The authors' L2 penalty on the trainable
            matrices, added to the training loss (`weight_decay_terms`;
            their 1e-4 for SICK, 5e-5 for SNLI). Defaults to `0.0`.
        baseline: the REINFORCE baseline, `"leave_one_out"` (the mean
            reward of the batch's other examples) or `"none"` (the
            authors'); see `policy_gradient_loss`. Defaults to
            `"leave_one_out"`.
        seed: int. Defaults to `None`.

    Returns:
        Called on `{"premise": (B, T), "hypothesis": (B, S)}` int ids, a
        dict: `"probabilities"` `(B, C)` float32, and the samplers'
        `"log_prob"` `(B, 2)` and `"selection_percentage"` `(B, 2)` of
        premise and hypothesis.

    Example:

    >>> model = ReSANClassifier(vocabulary_size=30, embedding_dim=6,
    ...                         hidden_dim=4, seed=0)
    >>> out = model({"premise": np.array([[3, 4, 0]]),
    ...              "hypothesis": np.array([[5, 6]])})
    >>> keras.ops.shape(out["probabilities"]), keras.ops.shape(out["log_prob"])
    ((1, 3), (1, 2))

    References:
        - [Shen et al., 2018, ReSAN](https://arxiv.org/abs/1801.10296),
          sections 4 and 5.1.
    """

    def __init__(
        self,
        vocabulary_size,
        embeddings=None,
        embedding_dim=300,
        hidden_dim=100,
        num_classes=3,
        capacity=None,
        dropout=0.1,
        trainable_embeddings=False,
        reward_weight=1.0,
        sparsity_penalty=0.02,
        variant="authors",
        empty_context=None,
        sampler_keep_bias=0.0,
        soft_only_steps=0,
        sampler_only_steps=0,
        weight_decay=0.0,
        baseline="leave_one_out",
        seed=None,
        **kwargs,
    ):
        check_positive_int("num_classes", num_classes)
        check_choice("baseline", baseline, BASELINES)
        premise = keras.Input((None,), dtype="int32", name="premise")
        hypothesis = keras.Input((None,), dtype="int32", name="hypothesis")
        encoder, p, h, schedule = _encode_pair(locals(), premise, hypothesis)
        s_p, s_h = p["sentence"], h["sentence"]
        features = ops.concatenate([s_p, s_h, s_p - s_h, s_p * s_h], axis=-1)
        probabilities = _mlp_head(
            features, hidden_dim, num_classes, dropout, seed=seed
        )
        super().__init__(
            inputs={"premise": premise, "hypothesis": hypothesis},
            outputs=_pair_outputs(p, h, schedule, probabilities=probabilities),
            **{"name": "resan_classifier", **kwargs},
        )
        self._remember(encoder, locals())

    def task_cost(self, y, y_pred):
        """Cross-entropy of each example `(B,)`."""
        y = ops.reshape(ops.cast(y, "int32"), (-1,))
        probabilities = ops.cast(y_pred["probabilities"], "float32")
        picked = ops.take_along_axis(probabilities, y[:, None], axis=-1)
        return -ops.log(ops.clip(picked[:, 0], 1e-7, 1.0))


OBJECTIVES = ("mse", "kl")


@keras.saving.register_keras_serializable(package="keras_attention")
class ReSANRelatedness(_ReinforcedPairModel):
    """ReSAN for semantic relatedness (SICK), as a distribution over 1..5.

    ```
    s_1, s_2 = encoder(sentence_a), encoder(sentence_b)      # (B, 2H)
    features = [s_1 * s_2; |s_1 - s_2|]                      # (B, 4H)
    probabilities = softmax(W2 sigmoid(W1 features + b1) + b2)   # (B, K)
    score = sum_k k * probabilities[k]                       # (B,)
    cost = 0.5 * (score - y)^2               # objective="mse" (default)
    cost = KL(target(y) || probabilities)    # objective="kl" (Tai et al.)
    ```

    Training with `fit`: the targets are the scores `y` `(B,)` (or their
    `relatedness_target` distributions `(B, K)`, whose expectation is the
    score); compile with no loss, and the model trains the mean `cost` of
    its `objective`, as the authors' code does (`use_mse=True` by
    default). A loss given to `compile` is applied to `"probabilities"`
    instead. In training, `compute_loss` adds the REINFORCE loss of the
    token samplers with reward `-(cost + sparsity_penalty * percentage)`
    for each sentence.

    Masking: id 0 is padding, on both inputs.

    Args:
        vocabulary_size: int.
        embeddings: optional initial word vectors; not stored in the config.
        embedding_dim: int. Defaults to `300`.
        hidden_dim: int. `H`. Defaults to `100`.
        num_classes: int. Number of score levels `K`. Defaults to `5`.
        capacity: float. See `ReinforcedSelfAttention`. Defaults to `None`.
        dropout: float. Defaults to `0.1`.
        encoder_dropout: float. Dropout on the word vectors inside the
            shared encoder. Defaults to `None` (= `dropout`). Independent
            noise on the two sentences inflates `|s_1 - s_2|` in training,
            which biases the predicted scores upward at inference (see
            applications/relatedness/README.md).
        trainable_embeddings: bool. Defaults to `False`.
        reward_weight: float. Defaults to `1.0`.
        sparsity_penalty: float. `lambda`. Defaults to `0.006` (the
            authors' SICK value).
        objective: `"mse"` (the expected score, `0.5 (score - y)^2`) or
            `"kl"` (the sparse target of Tai et al.). Defaults to `"mse"`.
        variant: the encoder, `"authors"` or `"release_0_1"` (see
            `resan_encoder`). Defaults to `"authors"`; files saved by
            release 0.1 load as `"release_0_1"`.
        empty_context: the encoder's corner rule (see `resan_encoder`).
            Defaults to `None`, the variant's.
        sampler_keep_bias: float. Initial bias of the samplers' keep logit
            (see `resan_encoder`). Defaults to `0.0`.
        soft_only_steps: int. Training steps of the soft network alone,
            every real token selected (`TrainingSchedule`). Defaults to `0`.
        sampler_only_steps: int. Then steps of the samplers alone.
            Defaults to `0`.
        weight_decay: float. The authors' L2 penalty on the trainable
            matrices, added to the training loss (`weight_decay_terms`;
            their 1e-4 for SICK, 5e-5 for SNLI). Defaults to `0.0`.
        baseline: the REINFORCE baseline, `"leave_one_out"` (the mean
            reward of the batch's other examples) or `"none"` (the
            authors'); see `policy_gradient_loss`. Defaults to
            `"leave_one_out"`.
        seed: int. Defaults to `None`.

    Returns:
        Called on `{"sentence_a": (B, T), "sentence_b": (B, S)}` int ids, a
        dict with `"probabilities"` `(B, K)`, `"score"` `(B,)`, and the
        samplers' `"log_prob"` `(B, 2)` and `"selection_percentage"`
        `(B, 2)` of the two sentences.

    Example:

    >>> model = ReSANRelatedness(vocabulary_size=30, embedding_dim=6,
    ...                          hidden_dim=4, seed=0)
    >>> out = model({"sentence_a": np.array([[3, 4, 0]]),
    ...              "sentence_b": np.array([[5, 6]])})
    >>> keras.ops.shape(out["probabilities"]), keras.ops.shape(out["score"])
    ((1, 5), (1,))

    References:
        - [Shen et al., 2018, ReSAN](https://arxiv.org/abs/1801.10296),
          section 5.2.
        - [Tai et al., 2015](https://arxiv.org/abs/1503.00075).
    """

    def __init__(
        self,
        vocabulary_size,
        embeddings=None,
        embedding_dim=300,
        hidden_dim=100,
        num_classes=5,
        capacity=None,
        dropout=0.1,
        encoder_dropout=None,
        trainable_embeddings=False,
        reward_weight=1.0,
        sparsity_penalty=0.006,
        objective="mse",
        variant="authors",
        empty_context=None,
        sampler_keep_bias=0.0,
        soft_only_steps=0,
        sampler_only_steps=0,
        weight_decay=0.0,
        baseline="leave_one_out",
        seed=None,
        **kwargs,
    ):
        check_positive_int("num_classes", num_classes)
        check_choice("baseline", baseline, BASELINES)
        check_choice("objective", objective, OBJECTIVES)
        if encoder_dropout is not None:
            check_rate("encoder_dropout", encoder_dropout)
        left = keras.Input((None,), dtype="int32", name="sentence_a")
        right = keras.Input((None,), dtype="int32", name="sentence_b")
        encoder, a, b, schedule = _encode_pair(locals(), left, right)
        s_1, s_2 = a["sentence"], b["sentence"]
        features = ops.concatenate([s_1 * s_2, ops.abs(s_1 - s_2)], axis=-1)
        probabilities = _mlp_head(
            features,
            hidden_dim,
            num_classes,
            dropout,
            activation="sigmoid",
            seed=seed,
        )
        levels = ops.arange(1, num_classes + 1, dtype="float32")
        score = ops.sum(probabilities * levels, axis=-1)
        super().__init__(
            inputs={"sentence_a": left, "sentence_b": right},
            outputs=_pair_outputs(
                a, b, schedule, probabilities=probabilities, score=score
            ),
            **{"name": "resan_relatedness", **kwargs},
        )
        self._remember(encoder, locals())

    @classmethod
    def _config_keys(cls):
        return _CONFIG_KEYS + ("encoder_dropout", "objective")

    @classmethod
    def from_config(cls, config):
        # Files saved by release 0.1 (no `objective`, no `variant`) trained
        # the KL divergence with release 0.1's encoder.
        return cls(**{"objective": "kl", "variant": "release_0_1", **config})

    def task_cost(self, y, y_pred):
        """The `objective`'s cost of each example `(B,)`."""
        y = ops.cast(y, "float32")
        probabilities = ops.cast(y_pred["probabilities"], "float32")
        levels = ops.arange(1, self.num_classes + 1, dtype="float32")
        if len(y.shape) == 2:
            target, scores = y, ops.sum(y * levels, axis=-1)
        else:
            scores = ops.reshape(y, (-1,))
            target = relatedness_distribution(scores, self.num_classes)
        if self.objective == "mse":
            return 0.5 * ops.square(
                ops.cast(y_pred["score"], "float32") - scores
            )
        # KL(target || probabilities), as the authors clip both.
        target = ops.clip(target, 1e-7, 1.0)
        probabilities = ops.clip(probabilities, 1e-7, 1.0)
        return ops.sum(target * ops.log(target / probabilities), axis=-1)


def relatedness_distribution(scores, num_classes=5):
    """`relatedness_target` as a backend tensor op (no input check)."""
    scores = ops.cast(scores, "float32")
    floor = ops.minimum(ops.floor(scores), num_classes - 1.0)
    levels = ops.arange(1, num_classes + 1, dtype="float32")  # (K,)
    floor = ops.expand_dims(floor, -1)
    upper = ops.expand_dims(scores, -1) - floor  # weight of floor + 1
    return ops.where(
        ops.equal(levels, floor),
        1.0 - upper,
        ops.where(ops.equal(levels, floor + 1.0), upper, 0.0),
    )


def _mlp_head(
    features, hidden_dim, num_classes, dropout, activation="elu", seed=None
):
    x = keras.layers.Dense(
        hidden_dim, activation=activation, name="head_hidden"
    )(features)
    x = keras.layers.Dropout(
        dropout, seed=sub_seed(seed, "head_dropout"), name="head_dropout"
    )(x)
    return keras.layers.Dense(
        num_classes, activation="softmax", dtype="float32", name="head_output"
    )(x)


def _count(mask):
    return ops.sum(ops.cast(mask, "float32"), axis=-1)
