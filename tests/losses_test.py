import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import losses
from keras_attention import metrics

RNG = np.random.default_rng(5)


def numpy_label_smoothed_cross_entropy(labels, logits, epsilon, pad=0):
    """Float64 reference with an explicit smoothed target distribution."""
    logits = np.float64(logits)
    vocabulary = logits.shape[-1]
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    target = np.full(logits.shape, epsilon / vocabulary)
    np.put_along_axis(
        target,
        labels[..., None],
        1.0 - epsilon + epsilon / vocabulary,
        axis=-1,
    )
    per_token = -(target * log_probs).sum(-1)
    keep = labels != pad
    return per_token[keep].mean()


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_matches_numpy_reference_and_ignores_padding(epsilon):
    logits = RNG.normal(size=(3, 5, 11)).astype("float32") * 3
    labels = RNG.integers(1, 11, size=(3, 5))
    labels[0, 3:] = 0
    labels[2, 1:] = 0
    loss = losses.LabelSmoothedSparseCategoricalCrossentropy(epsilon=epsilon)
    expected = numpy_label_smoothed_cross_entropy(labels, logits, epsilon)
    assert float(loss(labels, logits)) == pytest.approx(expected, rel=1e-5)
    # Changing logits at padded positions changes nothing.
    changed = logits.copy()
    changed[labels == 0] += 50.0
    assert float(loss(labels, changed)) == pytest.approx(expected, rel=1e-5)


def test_never_builds_a_one_hot(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("one_hot was called")

    monkeypatch.setattr(keras.ops, "one_hot", forbidden)
    monkeypatch.setattr(ops, "one_hot", forbidden)
    loss = losses.LabelSmoothedSparseCategoricalCrossentropy()
    value = loss(np.array([[1, 0]]), RNG.normal(size=(1, 2, 50_000)))
    assert np.isfinite(float(value))


def test_config_round_trip_and_bad_arguments():
    loss = losses.LabelSmoothedSparseCategoricalCrossentropy(epsilon=0.2)
    revived = keras.losses.deserialize(keras.losses.serialize(loss))
    assert revived.epsilon == 0.2 and revived.ignore_index == 0
    with pytest.raises(ValueError, match="Received: epsilon=1.5"):
        losses.LabelSmoothedSparseCategoricalCrossentropy(epsilon=1.5)
    with pytest.raises(ValueError, match="Received: from_logits=False"):
        losses.LabelSmoothedSparseCategoricalCrossentropy(from_logits=False)


def test_masked_accuracy_and_perplexity_skip_padding():
    logits = np.zeros((1, 4, 5), "float32")
    logits[0, 0, 2] = logits[0, 1, 3] = logits[0, 2, 1] = 10.0
    labels = np.array([[2, 3, 4, 0]])  # two right, one wrong, one padding
    accuracy = metrics.MaskedAccuracy()
    accuracy.update_state(labels, logits)
    assert float(accuracy.result()) == pytest.approx(2 / 3)
    perplexity = metrics.Perplexity()
    perplexity.update_state(labels, logits)
    nll = numpy_label_smoothed_cross_entropy(labels, logits, 0.0)
    assert float(perplexity.result()) == pytest.approx(np.exp(nll), rel=1e-5)
