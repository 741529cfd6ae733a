"""The ReSAN sentence encoder: word vectors -> sampled heads and dependents
-> forward and backward ReSA -> source2token pooling.

`EncoderConfig` holds the encoder's arguments; `build_encoder` builds the
`keras.Model` from one, and `resan_encoder` is the public builder.
"""

import dataclasses
import math

import keras
from keras import ops

from keras_attention.layers.reinforced_self_attention import EMPTY_CONTEXTS
from keras_attention.layers.reinforced_self_attention import (
    ReinforcedSelfAttention,
)
from keras_attention.layers.reinforced_sequence_sampler import (
    ReinforcedSequenceSampler,
)
from keras_attention.layers.source2_token_attention import Source2TokenAttention
from keras_attention.utils.seeds import sub_seed
from keras_attention.utils.validation import check_choice
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rate

VARIANTS = ("authors", "release_0_1")


@dataclasses.dataclass(frozen=True)
class EncoderConfig:
    """The arguments of the ReSAN encoder (see `resan_encoder`).

    `validated(embeddings)` checks them and resolves the defaults that
    depend on others: the width of given `embeddings`, and the corner rule
    of the variant when `empty_context` is `None`.
    """

    vocabulary_size: int
    embedding_dim: int = 300
    hidden_dim: int = 100
    capacity: float = None
    dropout: float = 0.0
    trainable_embeddings: bool = False
    seed: int = None
    variant: str = "authors"
    empty_context: str = None
    sampler_keep_bias: float = 0.0

    def validated(self, embeddings=None):
        check_positive_int("vocabulary_size", self.vocabulary_size)
        check_positive_int("hidden_dim", self.hidden_dim)
        check_rate("dropout", self.dropout)
        check_choice("variant", self.variant, VARIANTS)
        embedding_dim = self.embedding_dim
        if embeddings is not None:
            shape = tuple(ops.shape(embeddings))
            if len(shape) != 2 or shape[0] != self.vocabulary_size:
                raise ValueError(
                    "Argument `embeddings` must have shape (vocabulary_size, "
                    f"embedding_dim) = ({self.vocabulary_size}, ...). "
                    f"Received: embeddings with shape {shape}"
                )
            embedding_dim = shape[1]
        check_positive_int("embedding_dim", embedding_dim)
        return dataclasses.replace(
            self,
            embedding_dim=embedding_dim,
            empty_context=self._checked_empty_context(),
        )

    def _checked_empty_context(self):
        """The corner rule (the variant's when `None`), validated with the
        samplers' initial bias."""
        empty_context, bias = self.empty_context, self.sampler_keep_bias
        if empty_context is not None:
            check_choice("empty_context", empty_context, EMPTY_CONTEXTS)
        if (
            isinstance(bias, bool)
            or not isinstance(bias, (int, float))
            or not math.isfinite(bias)
        ):
            raise ValueError(
                "Argument `sampler_keep_bias` must be a finite float. "
                f"Received: sampler_keep_bias={bias!r}"
            )
        if self.variant == "release_0_1":
            if empty_context not in (None, "mean") or bias:
                raise ValueError(
                    "`variant='release_0_1'` has the \"mean\" corner rule "
                    "and zero sampler biases. Received: "
                    f"empty_context={empty_context!r}, "
                    f"sampler_keep_bias={bias!r}"
                )
            return "mean"
        return empty_context or "authors"


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
    config = EncoderConfig(
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
    return build_encoder(config.validated(embeddings), embeddings, name=name)


def build_encoder(config, embeddings=None, select_all_input=False, name=None):
    """Builds the encoder of a validated `EncoderConfig`.

    Args:
        config: an `EncoderConfig`, after `validated()`.
        embeddings: optional initial word vectors.
        select_all_input: bool. With `True`, a second input `(B,)` (1 =
            select every real token: the soft-only phase of the training
            schedule).
        name: str. Defaults to `"resan_encoder"`.

    Returns:
        The encoder `keras.Model` (see `resan_encoder`).
    """
    ids = keras.Input((None,), dtype="int32", name="token_ids")
    inputs = ids
    select_all = None
    if select_all_input:
        select_all = keras.Input((), dtype="float32", name="select_all")
        inputs = [ids, select_all]
    mask = ops.not_equal(ids, 0)  # (B, T)
    initializer = "uniform"
    if embeddings is not None:
        initializer = keras.initializers.Constant(embeddings)
    embedded = keras.layers.Embedding(
        config.vocabulary_size,
        config.embedding_dim,
        embeddings_initializer=initializer,
        trainable=config.trainable_embeddings,
        name="word_embedding",
    )(ids)
    if config.variant == "release_0_1":
        outputs, log_prob, percentage = _release_0_1_directions(
            config, embedded, mask
        )
    else:
        outputs, log_prob, percentage = _authors_directions(
            config, embedded, mask, select_all
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
        name=name or "resan_encoder",
    )


def _authors_directions(config, embedded, mask, select_all=None):
    # One head and one dependent sampler, shared by both directions, read
    # the word vectors (without gradient: theta_r learns from the policy
    # gradient only); each direction has its own ELU projection.
    hidden_dim, seed = config.hidden_dim, config.seed
    sampler_inputs = ops.stop_gradient(embedded)
    selections, log_prob = [], 0.0
    for role in ("head", "dependent"):
        sampler = ReinforcedSequenceSampler(
            hidden_dim=hidden_dim,
            seed=sub_seed(seed, f"{role}_sampler"),
            name=f"{role}_sampler",
        )
        selection, role_log_prob = sampler(sampler_inputs, mask=mask)
        if config.sampler_keep_bias:
            # Only the keep logit's bias: the fusion layer keeps zeros.
            sampler.keep_dense.bias.assign([float(config.sampler_keep_bias)])
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
            config.dropout,
            seed=sub_seed(seed, f"{direction}_dropout"),
            name=f"{direction}_dropout",
        )(embedded)
        x = keras.layers.Dense(
            hidden_dim, activation="elu", name=f"{direction}_projection"
        )(x)
        outputs.append(
            ReinforcedSelfAttention(
                direction=direction,
                capacity=config.capacity,
                use_samplers=False,
                empty_context=config.empty_context,
                name=f"{direction}_attention",
            )(x, mask=mask, heads=heads, dependents=dependents)
        )
    return outputs, log_prob, selection_percentage(heads, dependents, mask)


def _release_0_1_directions(config, embedded, mask):
    # Release 0.1: one shared projection, and a head and a dependent
    # sampler of its own in each direction (four in all).
    seed = config.seed
    x = keras.layers.Dense(
        config.hidden_dim, activation="elu", name="input_projection"
    )(embedded)
    x = keras.layers.Dropout(
        config.dropout,
        seed=sub_seed(seed, "input_dropout"),
        name="input_dropout",
    )(x)
    outputs, log_prob, percentage = [], 0.0, 0.0
    for direction in ("forward", "backward"):
        out, heads, dependents, layer_log_prob = ReinforcedSelfAttention(
            direction=direction,
            capacity=config.capacity,
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


def _count(mask):
    return ops.sum(ops.cast(mask, "float32"), axis=-1)
