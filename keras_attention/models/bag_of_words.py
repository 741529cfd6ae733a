"""A mean-of-word-vectors baseline for natural language inference."""

import keras
from keras import ops

from keras_attention.models.decomposable_attention import classifier
from keras_attention.models.decomposable_attention import embed_and_project
from keras_attention.models.decomposable_attention import feed_forward
from keras_attention.models.decomposable_attention import token_inputs
from keras_attention.ops.masking import masked_mean
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rate


def bag_of_words_model(
    vocabulary_size,
    embeddings=None,
    embedding_dim=300,
    hidden_dim=200,
    num_layers=2,
    num_classes=3,
    dropout=0.2,
    trainable_embeddings=False,
    seed=None,
    name="bag_of_words",
):
    """Builds an order-free NLI baseline: mean word vectors and an MLP.

    Each sentence becomes the mean of its projected word vectors; the two
    means are matched with the usual sentence-pair features and classified
    by a ReLU network:

    ```
    u = mean_i(premise_vectors_i @ W_proj)      # (B, H), frozen vectors
    v = mean_j(hypothesis_vectors_j @ W_proj)   # (B, H)
    probabilities = softmax(W_out MLP([u; v; |u - v|; u * v]))
    ```

    The word vectors, the projection, the MLP (`num_layers` ReLU layers of
    `hidden_dim` units with dropout) and the classifier are those of
    `decomposable_attention_model`, so the two differ only in attention.

    Masking: token id 0 is padding; means are taken over real tokens only,
    so padding never changes the output. An empty sentence has mean zero.

    Args:
        vocabulary_size: int. Number of rows of the embedding table.
        embeddings: optional `(vocabulary_size, embedding_dim)` array of
            word vectors. Defaults to a random table.
        embedding_dim: int. Width of the word vectors; taken from
            `embeddings` when given. Defaults to `300`.
        hidden_dim: int. Width of the projection and MLP. Defaults to
            `200`.
        num_layers: int. Hidden layers of the MLP. Defaults to `2`.
        num_classes: int. Number of labels. Defaults to `3`.
        dropout: float. Dropout rate after each hidden layer. Defaults to
            `0.2`.
        trainable_embeddings: bool. Whether the word vectors are trained.
            Defaults to `False`.
        seed: int. Seed for the dropout layers. Defaults to `None`.
        name: model name. Defaults to `"bag_of_words"`.

    Returns:
        A `keras.Model` with inputs `{"premise": (B, T), "hypothesis":
        (B, S)}` (int token ids, 0 = padding) and output class
        probabilities `(B, num_classes)` in float32.

    Example:

    >>> model = bag_of_words_model(
    ...     vocabulary_size=50, embedding_dim=8, hidden_dim=6
    ... )
    >>> probabilities = model(
    ...     {"premise": np.array([[3, 4, 0]]), "hypothesis": np.array([[5, 0]])}
    ... )
    >>> keras.ops.shape(probabilities)
    (1, 3)

    References:
        - [Bowman et al., 2015](https://arxiv.org/abs/1508.05326), the
          sum-of-words baseline.
        - [Parikh et al., 2016](https://arxiv.org/abs/1606.01933), whose
          projection and classifier this baseline shares.
    """
    check_positive_int("vocabulary_size", vocabulary_size)
    check_positive_int("hidden_dim", hidden_dim)
    check_positive_int("num_layers", num_layers)
    check_positive_int("num_classes", num_classes)
    check_rate("dropout", dropout)
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
    u = masked_mean(a, premise_mask)  # (B, H)
    v = masked_mean(b, hypothesis_mask)  # (B, H)
    features = keras.layers.Concatenate(name="match_features")(
        [u, v, ops.abs(u - v), u * v]
    )  # (B, 4H)
    mlp = feed_forward("classifier_mlp", hidden_dim, num_layers, dropout, seed)
    probabilities = classifier(mlp(features), num_classes)
    return keras.Model(
        {"premise": premise, "hypothesis": hypothesis},
        probabilities,
        name=name,
    )
