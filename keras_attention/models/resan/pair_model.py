"""What the two ReSAN sentence-pair heads share: one encoder for both
sentences, the training phases, and a `compute_loss` that adds the
samplers' REINFORCE loss to the task loss."""

import math
import re

import keras
from keras import ops

from keras_attention.models.resan.encoder import build_encoder
from keras_attention.models.resan.policy import SAMPLER_VARIABLES
from keras_attention.models.resan.policy import policy_gradient_loss
from keras_attention.models.resan.policy import policy_reward
from keras_attention.models.resan.schedule import TrainingSchedule
from keras_attention.models.resan.schedule import check_schedule_steps
from keras_attention.ops.replicas import scale_for_replicas
from keras_attention.presets import PresetMixin
from keras_attention.utils.seeds import sub_seed

# The constructor arguments both heads store and return in `get_config`
# (besides their own).
CONFIG_KEYS = (
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


def encode_pair(encoder_config, embeddings, schedule_steps, first, second):
    """Encodes both sentences with one encoder.

    Args:
        encoder_config: an `EncoderConfig`.
        embeddings: optional initial word vectors.
        schedule_steps: `(soft_only_steps, sampler_only_steps)`.
        first, second: the two int id inputs `(B, T)`, `(B, S)`.

    Returns:
        The encoder, both sentences' outputs and the schedule tensor
        `(B, 3)` (`None` for release 0.1, which has no schedule).
    """
    config = encoder_config.validated(embeddings)
    steps = check_schedule_steps(*schedule_steps)
    # The authors' encoder takes the soft-only phase's "select all" flag
    # as a second input.
    scheduled = config.variant == "authors"
    if not scheduled and any(steps):
        raise ValueError(
            "The training schedule needs `variant='authors'`. Received: "
            f"variant='release_0_1', soft_only_steps={steps[0]}, "
            f"sampler_only_steps={steps[1]}"
        )
    encoder = build_encoder(config, embeddings, select_all_input=scheduled)
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


def pair_outputs(first, second, schedule=None, **task_outputs):
    """The heads' output dict: the task outputs, and per sentence, in
    columns `(B, 2)`, the samplers' `log_prob` and selection percentage."""
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


def mlp_head(
    features, hidden_dim, num_classes, dropout, activation="elu", seed=None
):
    """One hidden layer, dropout, and a float32 softmax over the classes."""
    x = keras.layers.Dense(
        hidden_dim, activation=activation, name="head_hidden"
    )(features)
    x = keras.layers.Dropout(
        dropout, seed=sub_seed(seed, "head_dropout"), name="head_dropout"
    )(x)
    return keras.layers.Dense(
        num_classes, activation="softmax", dtype="float32", name="head_output"
    )(x)


def check_weight_decay(weight_decay):
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


class ReinforcedPairModel(PresetMixin, keras.Model):
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

    def store_config(self, encoder, **arguments):
        """Keeps the encoder and a public attribute per constructor
        argument, as `get_config` returns them."""
        self.encoder = encoder
        self.embedding_dim = encoder.get_layer("word_embedding").output_dim
        for name, value in arguments.items():
            setattr(self, name, value)
        self.reward_weight = float(self.reward_weight)
        self.sparsity_penalty = float(self.sparsity_penalty)
        self.weight_decay = check_weight_decay(self.weight_decay)
        # Reported by `fit` and `evaluate` beside the task metrics, so a
        # collapse of the samplers shows in the epoch logs.
        self.selection_tracker = keras.metrics.Mean(name="selection_percentage")

    @classmethod
    def config_keys(cls):
        return CONFIG_KEYS

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
        return {name: getattr(self, name) for name in self.config_keys()}

    @classmethod
    def from_config(cls, config):
        # Files saved by release 0.1 have no `variant`: its encoder.
        return cls(**{"variant": "release_0_1", **config})
