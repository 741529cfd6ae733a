"""ReSAN's sentence-pair models: `ReSANClassifier` (NLI) and
`ReSANRelatedness` (SICK), and the relatedness target distribution."""

import dataclasses

import keras
import numpy as np
from keras import ops

from keras_attention.models.resan.encoder import EncoderConfig
from keras_attention.models.resan.pair_model import CONFIG_KEYS
from keras_attention.models.resan.pair_model import ReinforcedPairModel
from keras_attention.models.resan.pair_model import encode_pair
from keras_attention.models.resan.pair_model import mlp_head
from keras_attention.models.resan.pair_model import pair_outputs
from keras_attention.models.resan.policy import BASELINES
from keras_attention.utils.validation import check_choice
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rate

OBJECTIVES = ("mse", "kl")
# The clips of the task costs (see `task_cost`).
CROSS_ENTROPY_EPSILON = 1e-7
KL_EPSILON = 1e-10


@keras.saving.register_keras_serializable(package="keras_attention")
class ReSANClassifier(ReinforcedPairModel):
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
    selection percentage (see `ReinforcedPairModel`).

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
        encoder_config = EncoderConfig(
            vocabulary_size=vocabulary_size,
            embedding_dim=embedding_dim,
            hidden_dim=hidden_dim,
            capacity=capacity,
            dropout=dropout,
            trainable_embeddings=trainable_embeddings,
            seed=seed,
            variant=variant,
            empty_context=empty_context,
            sampler_keep_bias=sampler_keep_bias,
        )
        encoder, p, h, schedule = encode_pair(
            encoder_config,
            embeddings,
            (soft_only_steps, sampler_only_steps),
            premise,
            hypothesis,
        )
        s_p, s_h = p["sentence"], h["sentence"]
        features = ops.concatenate([s_p, s_h, s_p - s_h, s_p * s_h], axis=-1)
        probabilities = mlp_head(
            features, hidden_dim, num_classes, dropout, seed=seed
        )
        super().__init__(
            inputs={"premise": premise, "hypothesis": hypothesis},
            outputs=pair_outputs(p, h, schedule, probabilities=probabilities),
            **{"name": "resan_classifier", **kwargs},
        )
        self.store_config(
            encoder,
            **_encoder_arguments(encoder_config),
            num_classes=num_classes,
            reward_weight=reward_weight,
            sparsity_penalty=sparsity_penalty,
            soft_only_steps=soft_only_steps,
            sampler_only_steps=sampler_only_steps,
            weight_decay=weight_decay,
            baseline=baseline,
        )

    def task_cost(self, y, y_pred):
        """Cross-entropy of each example `(B,)`.

        The authors' SNLI cost is the exact cross-entropy of the logits;
        this model outputs float32 probabilities, whose log is taken with
        the probability clipped at `CROSS_ENTROPY_EPSILON` (1e-7, Keras's
        epsilon). The two differ only where the true class gets a
        probability below 1e-7.
        """
        y = ops.reshape(ops.cast(y, "int32"), (-1,))
        probabilities = ops.cast(y_pred["probabilities"], "float32")
        picked = ops.take_along_axis(probabilities, y[:, None], axis=-1)
        return -ops.log(ops.clip(picked[:, 0], CROSS_ENTROPY_EPSILON, 1.0))


@keras.saving.register_keras_serializable(package="keras_attention")
class ReSANRelatedness(ReinforcedPairModel):
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
        encoder_config = EncoderConfig(
            vocabulary_size=vocabulary_size,
            embedding_dim=embedding_dim,
            hidden_dim=hidden_dim,
            capacity=capacity,
            dropout=dropout if encoder_dropout is None else encoder_dropout,
            trainable_embeddings=trainable_embeddings,
            seed=seed,
            variant=variant,
            empty_context=empty_context,
            sampler_keep_bias=sampler_keep_bias,
        )
        encoder, a, b, schedule = encode_pair(
            encoder_config,
            embeddings,
            (soft_only_steps, sampler_only_steps),
            left,
            right,
        )
        s_1, s_2 = a["sentence"], b["sentence"]
        features = ops.concatenate([s_1 * s_2, ops.abs(s_1 - s_2)], axis=-1)
        probabilities = mlp_head(
            features,
            hidden_dim,
            num_classes,
            dropout,
            activation="sigmoid",
            seed=seed,
        )
        # The score levels 1..K as a NumPy constant: ONNX converters then
        # fold it into the graph instead of asking for it as an input.
        levels = np.arange(1, num_classes + 1, dtype="float32")
        score = ops.sum(probabilities * levels, axis=-1)
        super().__init__(
            inputs={"sentence_a": left, "sentence_b": right},
            outputs=pair_outputs(
                a, b, schedule, probabilities=probabilities, score=score
            ),
            **{"name": "resan_relatedness", **kwargs},
        )
        self.store_config(
            encoder,
            **{**_encoder_arguments(encoder_config), "dropout": dropout},
            encoder_dropout=encoder_dropout,
            num_classes=num_classes,
            reward_weight=reward_weight,
            sparsity_penalty=sparsity_penalty,
            objective=objective,
            soft_only_steps=soft_only_steps,
            sampler_only_steps=sampler_only_steps,
            weight_decay=weight_decay,
            baseline=baseline,
        )

    @classmethod
    def config_keys(cls):
        return CONFIG_KEYS + ("encoder_dropout", "objective")

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
        # KL(target || probabilities), both clipped at 1e-10 as in the
        # authors' SICK code.
        target = ops.clip(target, KL_EPSILON, 1.0)
        probabilities = ops.clip(probabilities, KL_EPSILON, 1.0)
        return ops.sum(target * ops.log(target / probabilities), axis=-1)


def _encoder_arguments(encoder_config):
    """The encoder's constructor arguments as the heads store them (the
    word vector width is read from the built encoder)."""
    arguments = dataclasses.asdict(encoder_config)
    del arguments["embedding_dim"]
    return arguments


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
