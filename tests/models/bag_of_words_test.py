import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import models


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.mark.skipif(
    keras.backend.backend() == "jax",
    reason="backend-independent count, checked on tensorflow and torch "
    "(jax compiles every weight initialisation eagerly)",
)
def test_parameter_count_excludes_frozen_vectors():
    model = models.bag_of_words_model(vocabulary_size=10, embedding_dim=300)
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    hidden = 200
    expected = 300 * hidden  # projection
    expected += 4 * hidden * hidden + hidden + hidden * hidden + hidden
    expected += hidden * 3 + 3
    assert trainable == expected


def test_padding_never_changes_predictions_and_empty_is_allowed():
    model = models.bag_of_words_model(
        vocabulary_size=30, embedding_dim=6, hidden_dim=8, seed=1
    )
    rng = np.random.default_rng(2)
    premise = rng.integers(1, 30, (3, 6)).astype("int32")
    hypothesis = rng.integers(1, 30, (3, 4)).astype("int32")
    premise[1, 3:] = 0
    premise[2] = 0  # empty premise
    hypothesis[0, 1:] = 0

    def predict(length):
        def pad(x):
            return np.pad(x, ((0, 0), (0, length - x.shape[1])))

        return to_numpy(
            model.predict_on_batch(
                {"premise": pad(premise), "hypothesis": pad(hypothesis)}
            )
        )

    short, long = predict(10), predict(60)
    np.testing.assert_allclose(long, short, atol=1e-6, rtol=0)
    assert np.all(np.isfinite(short))
    np.testing.assert_allclose(short.sum(-1), 1.0, atol=1e-6)


def test_word_order_is_ignored():
    model = models.bag_of_words_model(
        vocabulary_size=30, embedding_dim=6, hidden_dim=8
    )
    premise = np.array([[3, 4, 5, 6]], "int32")
    hypothesis = np.array([[7, 8, 0]], "int32")
    a = model({"premise": premise, "hypothesis": hypothesis})
    b = model({"premise": premise[:, ::-1].copy(), "hypothesis": hypothesis})
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-6)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="Received: hidden_dim=0"):
        models.bag_of_words_model(vocabulary_size=10, hidden_dim=0)
    with pytest.raises(ValueError, match="Received: embeddings with shape"):
        models.bag_of_words_model(
            vocabulary_size=10, embeddings=np.zeros((9, 4))
        )
