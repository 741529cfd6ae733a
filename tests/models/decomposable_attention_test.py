import os
import tempfile

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import models
from keras_attention import visualization

VOCABULARY = 40


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def pad(ids, length):
    return np.pad(ids, ((0, 0), (0, length - ids.shape[1])))


def pairs(lengths_a, lengths_b, seed=0):
    """Random token ids (1..VOCABULARY-1) with the given lengths, 0-padded."""
    rng = np.random.default_rng(seed)

    def batch(lengths):
        ids = rng.integers(1, VOCABULARY, (len(lengths), max(lengths) or 1))
        ids[np.arange(ids.shape[1])[None, :] >= np.array(lengths)[:, None]] = 0
        return ids.astype("int32")

    return batch(lengths_a), batch(lengths_b)


def small_model(intra_attention=True, **kwargs):
    return models.decomposable_attention_model(
        vocabulary_size=VOCABULARY,
        embedding_dim=6,
        hidden_dim=8,
        intra_attention=intra_attention,
        max_distance=3,
        seed=4,
        **kwargs,
    )


def paper_parameter_count(embedding_dim, hidden, classes, intra):
    """Trainable parameters of the paper's architecture, from its sizes."""

    def mlp(width):  # two ReLU layers of `hidden` units with biases
        return width * hidden + hidden + hidden * hidden + hidden

    width = 2 * hidden if intra else hidden
    count = embedding_dim * hidden  # linear projection
    count += mlp(width)  # F
    count += mlp(2 * width)  # G
    count += mlp(2 * hidden)  # H
    count += hidden * classes + classes  # classifier
    if intra:
        count += mlp(hidden) + 2 * 10 + 2  # F_intra and the distance bias
    return count


# Parameter counts do not depend on the backend; on jax, where eager
# weight initialisation compiles one kernel per weight shape, building the
# paper-sized models would take a large share of the test-time budget.
SKIP_ON_JAX = pytest.mark.skipif(
    keras.backend.backend() == "jax",
    reason="backend-independent count, checked on tensorflow and torch",
)


@SKIP_ON_JAX
@pytest.mark.parametrize("intra", [False, True], ids=["vanilla", "intra"])
def test_parameter_count_matches_the_paper(intra):
    model = models.decomposable_attention_model(
        vocabulary_size=10, embedding_dim=300, intra_attention=intra
    )
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert trainable == paper_parameter_count(300, 200, 3, intra)
    # The paper reports about 382K and 582K, embeddings excluded.
    paper = 582_000 if intra else 382_000
    assert abs(trainable - paper) / paper < 0.002
    # The word vectors are frozen.
    assert model.get_layer("word_embedding").trainable is False


@pytest.fixture(scope="module")
def model():
    return small_model()


def test_padding_never_changes_predictions(model):
    # Different lengths, a one-token hypothesis and an empty premise.
    premise, hypothesis = pairs([7, 3, 10, 0], [5, 1, 9, 4])
    short = model.predict_on_batch(
        {"premise": pad(premise, 10), "hypothesis": pad(hypothesis, 10)}
    )
    long = model.predict_on_batch(
        {"premise": pad(premise, 60), "hypothesis": pad(hypothesis, 60)}
    )
    np.testing.assert_allclose(
        to_numpy(long), to_numpy(short), atol=1e-6, rtol=0
    )


def test_empty_sentences_give_a_distribution(model):
    premise, hypothesis = pairs([0, 0, 4], [3, 0, 0])
    probabilities = to_numpy(
        model.predict_on_batch({"premise": premise, "hypothesis": hypothesis})
    )
    assert np.all(np.isfinite(probabilities))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-6)


def test_different_batch_sizes_raise(model):
    premise, _ = pairs([3, 4], [1])
    _, hypothesis = pairs([1, 1, 1], [2, 2, 2])
    with pytest.raises(ValueError, match="same batch size"):
        model({"premise": premise, "hypothesis": hypothesis})


def test_embeddings_are_used_and_checked():
    vectors = np.random.default_rng(1).normal(size=(VOCABULARY, 5))
    model = models.decomposable_attention_model(
        vocabulary_size=VOCABULARY, embeddings=vectors, hidden_dim=4
    )
    table = to_numpy(model.get_layer("word_embedding").embeddings)
    np.testing.assert_allclose(table, vectors, atol=1e-6)
    with pytest.raises(ValueError, match=r"Received: embeddings with shape"):
        models.decomposable_attention_model(
            vocabulary_size=VOCABULARY + 1, embeddings=vectors
        )
    with pytest.raises(ValueError, match="Received: max_distance=0"):
        models.decomposable_attention_model(
            vocabulary_size=VOCABULARY, intra_attention=True, max_distance=0
        )


def test_keras_file_round_trip_and_alignment_plot(model):
    premise, hypothesis = pairs([5, 2], [3, 4])
    inputs = {"premise": premise, "hypothesis": hypothesis}
    expected = to_numpy(model.predict_on_batch(inputs))
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        revived = keras.saving.load_model(path, safe_mode=True)
        np.testing.assert_allclose(
            to_numpy(revived.predict_on_batch(inputs)), expected, atol=1e-6
        )

        weights = visualization.alignment_weights(revived, premise, hypothesis)
        assert weights.shape == (2, 5, 4)
        # Rows of real premise tokens sum to 1 over real hypothesis tokens;
        # padding gets nothing.
        np.testing.assert_allclose(weights[1, :2].sum(-1), 1.0, atol=1e-6)
        assert np.all(weights[0, :, 3:] == 0.0) and np.all(weights[1, 2:] == 0)

        ax = visualization.plot_alignment(
            weights[1], ["a", "dog"], ["an", "animal", "runs", "."]
        )
        assert ax.get_images()[0].get_array().shape == (2, 4)
        image_path = os.path.join(directory, "alignment.png")
        ax.figure.savefig(image_path)
        assert os.path.getsize(image_path) > 0
    with pytest.raises(ValueError, match="Received: weights with shape"):
        visualization.plot_alignment(weights[1], ["a"] * 6, ["b"])
