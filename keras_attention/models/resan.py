"""ReSAN: the reinforced self-attention network and its sentence-pair heads.

The encoder maps token ids to a sentence vector with forward and backward
`ReinforcedSelfAttention` and `Source2TokenAttention` pooling. The two heads
(`ReSANClassifier` for NLI, `ReSANRelatedness` for SICK relatedness) are
`keras.Model` subclasses whose `compute_loss` adds the policy-gradient
(REINFORCE) loss of the token samplers to the supervised loss, so plain
`model.fit` trains everything on tensorflow, jax and torch.
"""

import keras
from keras import ops

from keras_attention import distribute
from keras_attention.layers.reinforced_self_attention import (
    ReinforcedSelfAttention,
)
from keras_attention.layers.source2_token_attention import Source2TokenAttention
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
    name="resan_encoder",
):
    """Builds the ReSAN sentence encoder.

    ```
    x = elu(input_projection(word_embedding(ids)))      # (B, T, H)
    forward = ReinforcedSelfAttention("forward")(x)     # (B, T, H)
    backward = ReinforcedSelfAttention("backward")(x)   # (B, T, H)
    sentence = Source2TokenAttention()([forward; backward])   # (B, 2H)
    ```

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
        name: str. Defaults to `"resan_encoder"`.

    Returns:
        A `keras.Model` from int ids `(B, T)` to a dict: `"sentence"`
        `(B, 2H)`, `"log_prob"` `(B,)` (log-probability of all four
        samplers' selections) and `"selection_percentage"` `(B,)` (the
        authors' percentage, `selection_percentage`, averaged over the two
        directions).

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
    check_positive_int("vocabulary_size", vocabulary_size)
    check_positive_int("hidden_dim", hidden_dim)
    check_rate("dropout", dropout)
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

    ids = keras.Input((None,), dtype="int32", name="token_ids")
    mask = ops.not_equal(ids, 0)  # (B, T)
    x = keras.layers.Embedding(
        vocabulary_size,
        embedding_dim,
        embeddings_initializer=initializer,
        trainable=trainable_embeddings,
        name="word_embedding",
    )(ids)
    x = keras.layers.Dense(
        hidden_dim, activation="elu", name="input_projection"
    )(x)
    x = keras.layers.Dropout(
        dropout, seed=sub_seed(seed, "input_dropout"), name="input_dropout"
    )(x)
    outputs, log_prob, percentage = [], 0.0, 0.0
    for direction in ("forward", "backward"):
        out, heads, dependents, layer_log_prob = ReinforcedSelfAttention(
            direction=direction,
            capacity=capacity,
            seed=sub_seed(seed, f"{direction}_attention"),
            name=f"{direction}_attention",
        )(x, mask=mask, return_selections=True)
        outputs.append(out)
        log_prob = log_prob + layer_log_prob
        # The authors' percentage: head fraction times dependent fraction.
        percentage = percentage + selection_percentage(heads, dependents, mask)
    sequence = ops.concatenate(outputs, axis=-1)  # (B, T, 2H)
    sentence = Source2TokenAttention(name="pooling")(sequence, mask=mask)
    return keras.Model(
        ids,
        {
            "sentence": sentence,
            "log_prob": log_prob,
            "selection_percentage": 0.5 * percentage,
        },
        name=name,
    )


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
    baseline_ij = mean of the other examples' rewards (leave-one-out)
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

    @classmethod
    def _config_keys(cls):
        return _CONFIG_KEYS

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        loss = super().compute_loss(
            x=x,
            y=y,
            y_pred=y_pred["probabilities"],
            sample_weight=sample_weight,
            training=training,
        )
        cost = self.task_cost(y, y_pred)  # (B,)
        if self.loss is None:
            # No compiled loss: the model's own task loss.
            loss = loss + distribute.scale_for_replicas(ops.mean(cost))
        if not training or self.reward_weight == 0.0:
            return loss
        reward = policy_reward(
            cost, y_pred["selection_percentage"], self.sparsity_penalty
        )
        # A mean over the local batch: divided by the replicas in sync, as
        # Keras does for compiled losses, since their gradients are summed.
        return loss + self.reward_weight * distribute.scale_for_replicas(
            policy_gradient_loss(reward, y_pred["log_prob"])
        )

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(
            x, y, y_pred["probabilities"], sample_weight
        )

    def get_config(self):
        return {name: getattr(self, name) for name in self._config_keys()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _pair_outputs(first, second, **task_outputs):
    # Per sentence, in columns: (B, 2).
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


def policy_gradient_loss(reward, log_prob):
    """REINFORCE surrogate with a leave-one-out batch-mean baseline.

    `reward` and `log_prob` are `(B,)` or `(B, J)` (one column per
    sentence). The gradient is `-mean_i(sum_j (r_ij - b_ij) grad
    log_prob_ij)`, the policy gradient estimate; `b_ij` is the mean reward
    of column `j` over the other examples of the batch, which needs no
    state and so behaves the same on every backend (the authors use no
    baseline; see docs/resan.md). Under `tf.distribute` the baseline covers
    the global batch (the rewards are summed over the replicas), so it does
    not depend on the number of devices.
    """
    reward = ops.stop_gradient(ops.cast(reward, "float32"))
    log_prob = ops.cast(log_prob, "float32")
    if len(reward.shape) == 1:
        reward, log_prob = reward[:, None], log_prob[:, None]
    count = ops.cast(ops.shape(reward)[0], "float32")
    total = distribute.replica_sum(
        ops.concatenate([ops.sum(reward, axis=0), ops.stack([count])], 0)
    )
    baseline = (total[:-1] - reward) / ops.maximum(total[-1] - 1.0, 1.0)
    advantage = reward - baseline
    return -ops.mean(ops.sum(advantage * log_prob, axis=-1))


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
        seed=None,
        **kwargs,
    ):
        check_positive_int("num_classes", num_classes)
        encoder = resan_encoder(
            vocabulary_size,
            embeddings=embeddings,
            embedding_dim=embedding_dim,
            hidden_dim=hidden_dim,
            capacity=capacity,
            dropout=dropout,
            trainable_embeddings=trainable_embeddings,
            seed=seed,
        )
        premise = keras.Input((None,), dtype="int32", name="premise")
        hypothesis = keras.Input((None,), dtype="int32", name="hypothesis")
        p, h = encoder(premise), encoder(hypothesis)
        s_p, s_h = p["sentence"], h["sentence"]
        features = ops.concatenate([s_p, s_h, s_p - s_h, s_p * s_h], axis=-1)
        probabilities = _mlp_head(
            features, hidden_dim, num_classes, dropout, seed=seed
        )
        super().__init__(
            inputs={"premise": premise, "hypothesis": hypothesis},
            outputs=_pair_outputs(p, h, probabilities=probabilities),
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
        trainable_embeddings: bool. Defaults to `False`.
        reward_weight: float. Defaults to `1.0`.
        sparsity_penalty: float. `lambda`. Defaults to `0.006` (the
            authors' SICK value).
        objective: `"mse"` (the expected score, `0.5 (score - y)^2`) or
            `"kl"` (the sparse target of Tai et al.). Defaults to `"mse"`.
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
        trainable_embeddings=False,
        reward_weight=1.0,
        sparsity_penalty=0.006,
        objective="mse",
        seed=None,
        **kwargs,
    ):
        check_positive_int("num_classes", num_classes)
        check_choice("objective", objective, OBJECTIVES)
        encoder = resan_encoder(
            vocabulary_size,
            embeddings=embeddings,
            embedding_dim=embedding_dim,
            hidden_dim=hidden_dim,
            capacity=capacity,
            dropout=dropout,
            trainable_embeddings=trainable_embeddings,
            seed=seed,
        )
        left = keras.Input((None,), dtype="int32", name="sentence_a")
        right = keras.Input((None,), dtype="int32", name="sentence_b")
        a, b = encoder(left), encoder(right)
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
                a, b, probabilities=probabilities, score=score
            ),
            **{"name": "resan_relatedness", **kwargs},
        )
        self._remember(encoder, locals())

    @classmethod
    def _config_keys(cls):
        return _CONFIG_KEYS + ("objective",)

    @classmethod
    def from_config(cls, config):
        # Files saved before `objective` existed trained the KL divergence.
        return cls(**{"objective": "kl", **config})

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
