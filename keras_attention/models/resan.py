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

from keras_attention.layers.reinforced_self_attention import (
    ReinforcedSelfAttention,
)
from keras_attention.layers.source2_token_attention import Source2TokenAttention
from keras_attention.ops.replicas import replica_sum
from keras_attention.ops.replicas import scale_for_replicas
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
        seed: int. Seed of the samplers and dropout. Defaults to `None`.
        name: str. Defaults to `"resan_encoder"`.

    Returns:
        A `keras.Model` from int ids `(B, T)` to a dict: `"sentence"`
        `(B, 2H)`, `"log_prob"` `(B,)` (log-probability of all four
        samplers' selections) and `"selection_rate"` `(B,)` (fraction of
        real tokens selected, averaged over the four samplers).

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
    x = keras.layers.Dropout(dropout, seed=seed, name="input_dropout")(x)
    outputs, log_prob, selected = [], 0.0, 0.0
    for i, direction in enumerate(("forward", "backward")):
        out, heads, dependents, layer_log_prob = ReinforcedSelfAttention(
            direction=direction,
            capacity=capacity,
            seed=None if seed is None else seed + 2 * i,
            name=f"{direction}_attention",
        )(x, mask=mask, return_selections=True)
        outputs.append(out)
        log_prob = log_prob + layer_log_prob
        selected = selected + _count(heads) + _count(dependents)
    sequence = ops.concatenate(outputs, axis=-1)  # (B, T, 2H)
    sentence = Source2TokenAttention(name="pooling")(sequence, mask=mask)
    real = ops.maximum(_count(mask), 1.0)
    rate = selected / (4.0 * real)
    return keras.Model(
        ids,
        {"sentence": sentence, "log_prob": log_prob, "selection_rate": rate},
        name=name,
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

    The model's outputs are the task outputs only. A second functional
    graph over the same layers also returns the samplers' `log_prob` and
    `selection_rate`; `call` runs that graph and keeps those two tensors
    for `compute_loss` of the same step, which adds, in training,

    ```
    reward = task_reward(y, probabilities) - sparsity_penalty * rate
    baseline_i = mean of the other examples' rewards (leave-one-out)
    loss += reward_weight * -mean(stop_gradient(reward - baseline) * log_prob)
    ```

    Only the samplers depend on `log_prob`, so only they learn from it.
    Keras calls `compute_loss` right after `call` inside the traced training
    step on tensorflow, jax and torch, so the kept tensors belong to the
    same forward pass (the same sampled selections).
    """

    def _add_policy_graph(self, inputs, outputs, log_prob, selection_rate):
        # Not tracked as a sublayer: it shares every layer with `self`.
        self._policy_graph = _Hidden(
            keras.Model(inputs, [outputs, log_prob, selection_rate])
        )
        self._policy_tensors = _Hidden(None)

    def _remember(self, encoder, arguments):
        # A public attribute per constructor argument, as in `get_config`.
        self.encoder = encoder
        self.embedding_dim = encoder.get_layer("word_embedding").output_dim
        for name in _CONFIG_KEYS:
            if name not in ("name", "embedding_dim"):
                setattr(self, name, arguments[name])
        self.reward_weight = float(self.reward_weight)
        self.sparsity_penalty = float(self.sparsity_penalty)

    def call(self, inputs, training=None, mask=None):
        outputs, log_prob, rate = self._policy_graph.value(
            inputs, training=training
        )
        self._policy_tensors = _Hidden((log_prob, rate))
        return outputs

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        probabilities = _probabilities(y_pred)
        loss = super().compute_loss(
            x=x,
            y=y,
            y_pred=probabilities,
            sample_weight=sample_weight,
            training=training,
        )
        if not training or self.reward_weight == 0.0:
            return loss
        log_prob, rate = self._policy_tensors.value
        reward = self.task_reward(y, probabilities)
        reward = reward - self.sparsity_penalty * rate
        # A mean over the local batch: divided by the replicas in sync, as
        # Keras does for compiled losses, since their gradients are summed.
        return loss + self.reward_weight * scale_for_replicas(
            policy_gradient_loss(reward, log_prob)
        )

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(
            x, y, _probabilities(y_pred), sample_weight
        )

    def policy_outputs(self, inputs, training=False):
        """`(outputs, log_prob, selection_rate)` of one forward pass."""
        return self._policy_graph.value(inputs, training=training)

    @property
    def policy_model(self):
        """A model sharing these weights that also returns `log_prob` and
        `selection_rate`; use its `predict` for batched inference."""
        return self._policy_graph.value

    def get_config(self):
        return {name: getattr(self, name) for name in _CONFIG_KEYS}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _Hidden:
    """Holds a value out of sight of Keras's attribute tracking."""

    def __init__(self, value):
        self.value = value


def _probabilities(y_pred):
    return y_pred["probabilities"] if isinstance(y_pred, dict) else y_pred


def policy_gradient_loss(reward, log_prob):
    """REINFORCE surrogate with a leave-one-out batch-mean baseline.

    Its gradient is `-mean((r_i - b_i) * grad log_prob_i)`, the policy
    gradient estimate; `b_i` is the mean reward of the other examples of
    the batch, which needs no state and so behaves the same on every
    backend. Under `tf.distribute` the baseline covers the global batch
    (the rewards are summed over the replicas), so it does not depend on
    the number of devices.
    """
    reward = ops.stop_gradient(ops.cast(reward, "float32"))
    count = ops.cast(ops.shape(reward)[0], "float32")
    total = replica_sum(ops.stack([ops.sum(reward), count]))
    baseline = (total[0] - reward) / ops.maximum(total[1] - 1.0, 1.0)
    advantage = reward - baseline
    return -ops.mean(advantage * ops.cast(log_prob, "float32"))


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
    class ids. In training, `compute_loss` adds the REINFORCE loss of the
    token samplers, with reward 1 for a correct prediction and 0 otherwise,
    minus `sparsity_penalty` times the selection rate.

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
        sparsity_penalty: float. Reward lost per unit of selection rate.
            Defaults to `0.0`.
        seed: int. Defaults to `None`.

    Returns:
        Called on `{"premise": (B, T), "hypothesis": (B, S)}` int ids, the
        class probabilities `(B, C)` in float32. `policy_outputs(inputs)`
        also returns the samplers' `log_prob` `(B,)` and `selection_rate`
        `(B,)` of the same forward pass.

    Example:

    >>> model = ReSANClassifier(vocabulary_size=30, embedding_dim=6,
    ...                         hidden_dim=4, seed=0)
    >>> probabilities = model({"premise": np.array([[3, 4, 0]]),
    ...                        "hypothesis": np.array([[5, 6]])})
    >>> keras.ops.shape(probabilities)
    (1, 3)

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
        sparsity_penalty=0.0,
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
        probabilities = _mlp_head(features, hidden_dim, num_classes, dropout)
        inputs = {"premise": premise, "hypothesis": hypothesis}
        super().__init__(
            inputs=inputs,
            outputs=probabilities,
            **{"name": "resan_classifier", **kwargs},
        )
        self._add_policy_graph(
            inputs,
            probabilities,
            p["log_prob"] + h["log_prob"],
            0.5 * (p["selection_rate"] + h["selection_rate"]),
        )
        self._remember(encoder, locals())

    def task_reward(self, y, probabilities):
        y = ops.reshape(ops.cast(y, "int32"), (-1,))
        predicted = ops.cast(ops.argmax(probabilities, axis=-1), "int32")
        return ops.cast(ops.equal(predicted, y), "float32")


@keras.saving.register_keras_serializable(package="keras_attention")
class ReSANRelatedness(_ReinforcedPairModel):
    """ReSAN for semantic relatedness (SICK), as a distribution over 1..5.

    ```
    s_1, s_2 = encoder(sentence_a), encoder(sentence_b)      # (B, 2H)
    features = [s_1 * s_2; |s_1 - s_2|]                      # (B, 4H)
    probabilities = softmax(W2 sigmoid(W1 features + b1) + b2)   # (B, K)
    score = sum_k k * probabilities[k]                       # (B,)
    ```

    Training with `fit`: the targets are `relatedness_target(scores)`;
    compile with `keras.losses.KLDivergence()`. In training,
    `compute_loss` adds the REINFORCE loss of the token samplers with the
    negative per-pair KL divergence as reward, minus `sparsity_penalty`
    times the selection rate.

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
        sparsity_penalty: float. Defaults to `0.0`.
        seed: int. Defaults to `None`.

    Returns:
        Called on `{"sentence_a": (B, T), "sentence_b": (B, S)}` int ids, a
        dict with `"probabilities"` `(B, K)` and `"score"` `(B,)`.
        `policy_outputs(inputs)` also returns the samplers' `log_prob`
        `(B,)` and `selection_rate` `(B,)` of the same forward pass.

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
        sparsity_penalty=0.0,
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
        left = keras.Input((None,), dtype="int32", name="sentence_a")
        right = keras.Input((None,), dtype="int32", name="sentence_b")
        a, b = encoder(left), encoder(right)
        s_1, s_2 = a["sentence"], b["sentence"]
        features = ops.concatenate([s_1 * s_2, ops.abs(s_1 - s_2)], axis=-1)
        probabilities = _mlp_head(
            features, hidden_dim, num_classes, dropout, activation="sigmoid"
        )
        levels = ops.arange(1, num_classes + 1, dtype="float32")
        score = ops.sum(probabilities * levels, axis=-1)
        inputs = {"sentence_a": left, "sentence_b": right}
        outputs = {"probabilities": probabilities, "score": score}
        super().__init__(
            inputs=inputs,
            outputs=outputs,
            **{"name": "resan_relatedness", **kwargs},
        )
        self._add_policy_graph(
            inputs,
            outputs,
            a["log_prob"] + b["log_prob"],
            0.5 * (a["selection_rate"] + b["selection_rate"]),
        )
        self._remember(encoder, locals())

    def task_reward(self, y, probabilities):
        # Negative KL divergence of each pair, KL(y || probabilities).
        y = ops.cast(y, "float32")
        probabilities = ops.clip(probabilities, 1e-7, 1.0)
        ratio = ops.log(ops.clip(y, 1e-7, 1.0) / probabilities)
        return -ops.sum(y * ratio, axis=-1)


def _mlp_head(features, hidden_dim, num_classes, dropout, activation="elu"):
    x = keras.layers.Dense(
        hidden_dim, activation=activation, name="head_hidden"
    )(features)
    x = keras.layers.Dropout(dropout, name="head_dropout")(x)
    return keras.layers.Dense(
        num_classes, activation="softmax", dtype="float32", name="head_output"
    )(x)


def _count(mask):
    return ops.sum(ops.cast(mask, "float32"), axis=-1)
