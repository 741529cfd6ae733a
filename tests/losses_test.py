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


def numpy_symmetric_kl(labels, logits_1, logits_2, pad=0):
    """Float64 reference: (KL(p || q) + KL(q || p)) / 2 per token, averaged
    over the non-padding tokens."""

    def log_softmax(logits):
        logits = np.float64(logits)
        shifted = logits - logits.max(-1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))

    log_p, log_q = log_softmax(logits_1), log_softmax(logits_2)
    p, q = np.exp(log_p), np.exp(log_q)
    kl_pq = (p * (log_p - log_q)).sum(-1)
    kl_qp = (q * (log_q - log_p)).sum(-1)
    per_token = 0.5 * (kl_pq + kl_qp)
    return per_token[labels != pad].mean()


def padded_labels():
    labels = RNG.integers(1, 11, size=(3, 5))
    labels[0, 3:] = 0
    labels[2, 1:] = 0
    return labels


def test_r_drop_divergence_matches_numpy_reference():
    labels = padded_labels()
    logits_1 = RNG.normal(size=(3, 5, 11)).astype("float32") * 2
    logits_2 = RNG.normal(size=(3, 5, 11)).astype("float32") * 2
    value = losses.r_drop_divergence(labels, logits_1, logits_2, rescale=True)
    expected = numpy_symmetric_kl(labels, logits_1, logits_2)
    assert float(ops.mean(value)) == pytest.approx(expected, rel=1e-5)
    assert expected > 0.1
    # Symmetric, zero for equal passes, blind to padded positions.
    swapped = losses.r_drop_divergence(labels, logits_2, logits_1, rescale=True)
    assert float(ops.mean(swapped)) == pytest.approx(expected, rel=1e-5)
    same = losses.r_drop_divergence(labels, logits_1, logits_1)
    assert float(ops.max(ops.abs(same))) < 1e-6
    changed = logits_2.copy()
    changed[labels == 0] += 50.0
    value = losses.r_drop_divergence(labels, logits_1, changed, rescale=True)
    assert float(ops.mean(value)) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_r_drop_two_pass_loss_matches_numpy_reference(alpha):
    labels = padded_labels()
    logits_1 = RNG.normal(size=(3, 5, 11)).astype("float32") * 2
    logits_2 = RNG.normal(size=(3, 5, 11)).astype("float32") * 2
    inner = losses.LabelSmoothedSparseCategoricalCrossentropy(epsilon=0.1)
    loss = losses.RDropLoss(inner, alpha=alpha)
    value = loss.two_pass_loss(
        lambda y, logits, weights: inner(y, logits, weights),
        labels,
        logits_1,
        logits_2,
        None,
    )
    expected = 0.5 * (
        numpy_label_smoothed_cross_entropy(labels, logits_1, 0.1)
        + numpy_label_smoothed_cross_entropy(labels, logits_2, 0.1)
    ) + alpha * numpy_symmetric_kl(labels, logits_1, logits_2)
    assert float(value) == pytest.approx(expected, rel=1e-5)
    # Called on its own (evaluation), the wrapper is the wrapped loss.
    single = numpy_label_smoothed_cross_entropy(labels, logits_1, 0.1)
    assert float(loss(labels, logits_1)) == pytest.approx(single, rel=1e-5)


def test_r_drop_loss_config_round_trip_and_bad_arguments():
    loss = losses.RDropLoss(
        losses.LabelSmoothedSparseCategoricalCrossentropy(epsilon=0.2),
        alpha=0.5,
    )
    revived = keras.losses.deserialize(keras.losses.serialize(loss))
    assert isinstance(revived, losses.RDropLoss)
    assert revived.alpha == 0.5 and revived.loss.epsilon == 0.2
    for alpha in (-1.0, float("nan"), "1", True):
        with pytest.raises(ValueError, match="Received: alpha="):
            losses.RDropLoss("mse", alpha=alpha)
