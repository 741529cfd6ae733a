"""The decomposable attention model for natural language inference."""

import keras
from keras import ops

from keras_attention.layers._feed_forward import dense_stack
from keras_attention.layers.intra_sentence_attention import (
    IntraSentenceAttention,
)
from keras_attention.layers.soft_alignment import SoftAlignment
from keras_attention.ops.masking import masked_sum
from keras_attention.utils.seeds import sub_seed
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rate

ALIGNMENT_LAYER = "soft_alignment"


def decomposable_attention_model(
    vocabulary_size,
    embeddings=None,
    embedding_dim=300,
    hidden_dim=200,
    num_layers=2,
    num_classes=3,
    dropout=0.2,
    intra_attention=False,
    max_distance=10,
    trainable_embeddings=False,
    seed=None,
    name=None,
):
    """Builds Parikh et al.'s decomposable attention model (functional API).

    Attend, compare, aggregate, on word vectors projected to `hidden_dim`:

    ```
    a = premise_vectors @ W_proj          # (B, T, H), frozen vectors
    b = hypothesis_vectors @ W_proj       # (B, S, H)
    # optional intra-sentence attention (one layer shared by a and b):
    a, b = [a; a'], [b; b']               # (B, T, 2H), (B, S, 2H)
    beta, alpha = SoftAlignment(a, b)     # attend, F
    v1 = G([a; beta]); v2 = G([b; alpha]) # compare, (B, T, H), (B, S, H)
    v1 = sum_i v1_i; v2 = sum_j v2_j      # aggregate, over real tokens
    probabilities = softmax(W_out H([v1; v2]))   # (B, num_classes)
    ```

    `F`, `G`, `H` (and `F_intra`) are `num_layers` ReLU layers of
    `hidden_dim` units, each followed by dropout. The input projection is
    linear without bias. With the paper's sizes (300-d vectors, `H = 200`,
    3 classes) the model has 381,803 trainable parameters (paper: 382K)
    and 582,225 with intra-sentence attention (paper: 582K), embeddings
    excluded.

    Masking: token id 0 is padding. Padding masks are computed from the
    token ids and passed explicitly to every step; padded tokens get zero
    attention weight and are left out of the sums, so the probabilities do
    not depend on how much padding follows a sentence. An empty sentence
    (only padding) is allowed: it aligns to nothing and sums to zero, and
    the model still returns a probability distribution.

    Args:
        vocabulary_size: int. Number of rows of the embedding table.
        embeddings: optional `(vocabulary_size, embedding_dim)` array of
            word vectors (for example normalised GloVe). Defaults to a
            random table.
        embedding_dim: int. Width of the word vectors; taken from
            `embeddings` when given. Defaults to `300`.
        hidden_dim: int. Width of the projection and of `F`, `G`, `H`.
            Defaults to `200`.
        num_layers: int. Layers in each of `F`, `G`, `H`, `F_intra`.
            Defaults to `2`.
        num_classes: int. Number of labels. Defaults to `3`.
        dropout: float. Dropout rate after every hidden layer. Defaults to
            `0.2`.
        intra_attention: bool. Add intra-sentence attention. Defaults to
            `False`.
        max_distance: int. Distance buckets of the intra-sentence attention
            bias. Defaults to `10`.
        trainable_embeddings: bool. Whether the word vectors are trained.
            Defaults to `False` (frozen, as in the paper).
        seed: int. Seed for the dropout layers. Defaults to `None`.
        name: model name. Defaults to `"decomposable_attention"` or
            `"decomposable_attention_intra"`.

    Returns:
        A `keras.Model` with inputs `{"premise": (B, T), "hypothesis":
        (B, S)}` (int token ids, 0 = padding) and output class
        probabilities `(B, num_classes)` in float32. The layer named
        `"soft_alignment"` also outputs the alignment weights, which
        `keras_attention.visualization.alignment_weights` reads.

    Raises:
        ValueError: for a non-positive size, a dropout rate outside
            `[0, 1)`, or `embeddings` whose row count differs from
            `vocabulary_size`.

    Example:

    >>> model = decomposable_attention_model(
    ...     vocabulary_size=50, embedding_dim=8, hidden_dim=6
    ... )
    >>> premise = np.array([[3, 4, 5, 0]])
    >>> hypothesis = np.array([[6, 7, 0]])
    >>> probabilities = model({"premise": premise, "hypothesis": hypothesis})
    >>> keras.ops.shape(probabilities)
    (1, 3)

    References:
        - [Parikh et al., 2016](https://arxiv.org/abs/1606.01933).
    """
    check_positive_int("vocabulary_size", vocabulary_size)
    check_positive_int("hidden_dim", hidden_dim)
    check_positive_int("num_layers", num_layers)
    check_positive_int("num_classes", num_classes)
    check_positive_int("max_distance", max_distance)
    check_rate("dropout", dropout)
    if name is None:
        name = "decomposable_attention" + ("_intra" if intra_attention else "")
    premise, hypothesis, premise_mask, hypothesis_mask = token_inputs()
    a, b = embed_and_project(
        premise,
        hypothesis,
        vocabulary_size,
        embeddings,
        embedding_dim,
        hidden_dim,
        trainable_embeddings,
    )
    if intra_attention:
        intra = IntraSentenceAttention(
            hidden_dim=hidden_dim,
            num_layers=num_layers,
            max_distance=max_distance,
            dropout=dropout,
            seed=sub_seed(seed, "intra_sentence_attention"),
            name="intra_sentence_attention",
        )
        a = intra(a, mask=premise_mask)  # (B, T, 2H)
        b = intra(b, mask=hypothesis_mask)  # (B, S, 2H)

    # Attend.
    beta, alpha, _, _ = SoftAlignment(
        hidden_dim=hidden_dim,
        num_layers=num_layers,
        dropout=dropout,
        seed=sub_seed(seed, ALIGNMENT_LAYER),
        name=ALIGNMENT_LAYER,
    )(
        a,
        b,
        premise_mask=premise_mask,
        hypothesis_mask=hypothesis_mask,
        return_attention_scores=True,
    )

    # Compare: one network G for both directions.
    compare = feed_forward("compare", hidden_dim, num_layers, dropout, seed)
    concatenate = keras.layers.Concatenate(name="compare_concatenate")
    v1 = compare(concatenate([a, beta]))  # (B, T, H)
    v2 = compare(concatenate([b, alpha]))  # (B, S, H)

    # Aggregate: sums over real tokens, then H and a linear classifier.
    v1 = masked_sum(v1, premise_mask)  # (B, H)
    v2 = masked_sum(v2, hypothesis_mask)  # (B, H)
    v = keras.layers.Concatenate(name="aggregate_concatenate")([v1, v2])
    aggregate = feed_forward("aggregate", hidden_dim, num_layers, dropout, seed)
    probabilities = classifier(aggregate(v), num_classes)
    return keras.Model(
        {"premise": premise, "hypothesis": hypothesis},
        probabilities,
        name=name,
    )


def token_inputs():
    """The two named int inputs and their padding masks (id 0 = padding)."""
    premise = keras.Input((None,), dtype="int32", name="premise")
    hypothesis = keras.Input((None,), dtype="int32", name="hypothesis")
    return (
        premise,
        hypothesis,
        ops.not_equal(premise, 0),
        ops.not_equal(hypothesis, 0),
    )


def embed_and_project(
    premise,
    hypothesis,
    vocabulary_size,
    embeddings,
    embedding_dim,
    hidden_dim,
    trainable_embeddings,
):
    """Word vectors (shared, frozen by default) and a linear projection."""
    if embeddings is not None:
        shape = tuple(ops.shape(embeddings))
        if len(shape) != 2 or shape[0] != vocabulary_size:
            raise ValueError(
                "Argument `embeddings` must have shape (vocabulary_size, "
                f"embedding_dim) = ({vocabulary_size}, ...). Received: "
                f"embeddings with shape {shape}"
            )
        embedding_dim = shape[1]
    check_positive_int("embedding_dim", embedding_dim)
    embedding = keras.layers.Embedding(
        vocabulary_size,
        embedding_dim,
        trainable=trainable_embeddings,
        name="word_embedding",
    )
    embedding.build((None, None))
    if embeddings is not None:
        embedding.embeddings.assign(ops.cast(embeddings, "float32"))
    projection = keras.layers.Dense(
        hidden_dim, use_bias=False, name="input_projection"
    )
    return (
        projection(embedding(premise)),
        projection(embedding(hypothesis)),
    )


def feed_forward(name, hidden_dim, num_layers, dropout, seed):
    """ReLU `Dense` layers, each followed by dropout, as one function.

    Calling the returned function twice shares the layers (and weights).
    Dropout `i` is seeded with `sub_seed(seed, name, "dropout", i)`.
    """
    stack = []
    for index, dense in enumerate(dense_stack(name, hidden_dim, num_layers)):
        stack.append(dense)
        stack.append(
            keras.layers.Dropout(
                dropout,
                seed=sub_seed(seed, name, "dropout", index),
                name=f"{name}_dropout_{index}",
            )
        )

    def apply(x):
        for layer in stack:
            x = layer(x)
        return x

    return apply


def classifier(x, num_classes):
    """Linear class scores and a float32 softmax."""
    logits = keras.layers.Dense(num_classes, name="classifier")(x)
    return keras.layers.Activation(
        "softmax", dtype="float32", name="probabilities"
    )(logits)
