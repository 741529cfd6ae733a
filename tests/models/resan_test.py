import os
import tempfile

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import models

RNG = np.random.default_rng(17)


def pair_data(n=64, length=8, vocabulary=40):
    lengths = RNG.integers(1, length + 1, size=(2, n))
    ids = RNG.integers(1, vocabulary, size=(2, n, length))
    ids = np.where(np.arange(length) < lengths[..., None], ids, 0)
    labels = (ids[0, :, 0] % 3).astype("int32")
    return {"premise": ids[0], "hypothesis": ids[1]}, labels


def sampler_weights(model):
    return [
        np.array(ops.convert_to_numpy(w))
        for w in model.trainable_weights
        if "sampler" in w.path
    ]


def selection_rate(model, x):
    # Inference rule (keep probability > 0.5), through a compiled predict.
    _, _, rate = model.policy_model.predict(x, verbose=0)
    return float(np.mean(rate))


def classifier(**kwargs):
    return models.ReSANClassifier(
        vocabulary_size=40, embedding_dim=8, hidden_dim=6, seed=1, **kwargs
    )


def test_fit_trains_samplers_and_sparsity_penalty_lowers_selection():
    x, y = pair_data()
    model = classifier(sparsity_penalty=20.0, dropout=0.0)
    model.compile(
        optimizer=keras.optimizers.Adam(0.05),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    before_weights = sampler_weights(model)
    before_rate = selection_rate(model, x)
    history = model.fit(x, y, epochs=3, batch_size=32, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert "accuracy" in history.history
    after_rate = selection_rate(model, x)
    moved = [
        np.abs(a - b).max()
        for a, b in zip(sampler_weights(model), before_weights)
    ]
    assert len(moved) == 16 and min(moved) > 0.0, moved
    assert after_rate < before_rate - 0.1, (before_rate, after_rate)

    # Inference is deterministic; saving and reloading keeps the outputs.
    first = model.predict(x, verbose=0)
    second = model.predict(x, verbose=0)
    np.testing.assert_array_equal(first, second)
    padded = {k: np.pad(v, [(0, 0), (0, 5)]) for k, v in x.items()}
    np.testing.assert_allclose(
        model.predict(padded, verbose=0), first, atol=1e-5
    )
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "resan.keras")
        model.save(path)
        revived = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(revived.predict(x, verbose=0), first, atol=1e-5)
    assert revived.sparsity_penalty == 20.0


def test_without_reward_the_samplers_do_not_learn():
    x, y = pair_data(n=16)
    model = classifier(reward_weight=0.0)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    before = sampler_weights(model)
    other = [np.array(ops.convert_to_numpy(w)) for w in model.trainable_weights]
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    for a, b in zip(sampler_weights(model), before):
        np.testing.assert_array_equal(a, b)
    after = [np.array(ops.convert_to_numpy(w)) for w in model.trainable_weights]
    assert sum(np.abs(a - b).max() > 0 for a, b in zip(after, other)) > 10


def test_relatedness_target_has_the_score_as_expectation():
    scores = np.array([1.0, 2.5, 3.2, 5.0])
    target = models.relatedness_target(scores)
    np.testing.assert_allclose(target.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(target @ np.arange(1, 6), scores, atol=1e-5)
    with pytest.raises(ValueError, match=r"Received: scores=\[5.5\]"):
        models.relatedness_target([3.0, 5.5])


def test_bad_embeddings_are_rejected():
    with pytest.raises(ValueError, match=r"embeddings with shape \(5, 3\)"):
        models.resan_encoder(vocabulary_size=6, embeddings=np.zeros((5, 3)))
