import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(21)


def numpy_keep_logits(x, mask, weights, activation="elu"):
    """Float64 reference of the sampler's keep logits `(B, T)`."""
    w1, b1, w2, b2 = (np.float64(w) for w in weights)
    m = mask[..., None].astype(float)
    pooled = (x * m).sum(1, keepdims=True) / np.maximum(
        m.sum(1, keepdims=True), 1
    )
    pooled = np.broadcast_to(pooled, x.shape)
    hidden = np.concatenate([x, pooled, x * pooled], -1) @ w1 + b1
    if activation == "relu":
        hidden = np.maximum(hidden, 0)
    else:
        hidden = np.where(hidden > 0, hidden, np.expm1(np.minimum(hidden, 0)))
    return (hidden @ w2 + b2)[..., 0]


def numpy_log_prob(logits, selection, mask):
    log_p = -np.log1p(np.exp(-logits))
    log_q = -np.log1p(np.exp(logits))
    return np.where(mask, np.where(selection, log_p, log_q), 0.0).sum(-1)


def lengths_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


class ReinforcedSequenceSamplerTest(LayerTestCase):
    def test_layer_contract_with_padding(self):
        self.run_layer_test(
            layers.ReinforcedSequenceSampler,
            init_kwargs={"hidden_dim": 3, "seed": 4, "threshold": 0.4},
            input_data={
                "inputs": RNG.normal(size=(2, 5, 4)).astype("float32"),
                "mask": lengths_mask([5, 2], 5),
            },
            expected_output_shape=((2, 5), (2,)),
            # The loss is taken on the log-probability, the only output
            # with a gradient (the selection is discrete).
            training_output_index=1,
        )

    def test_matches_numpy_reference(self):
        sampler = layers.ReinforcedSequenceSampler(seed=2)
        x = RNG.normal(size=(3, 6, 4))
        mask = lengths_mask([6, 3, 0], 6)
        selection, log_prob, probs = sampler(
            x.astype("float32"),
            mask=mask,
            training=True,
            return_probabilities=True,
        )
        logits = numpy_keep_logits(
            x, mask, [to_numpy(w) for w in sampler.weights]
        )
        np.testing.assert_allclose(
            to_numpy(probs), 1 / (1 + np.exp(-logits)), atol=1e-5
        )
        selection = to_numpy(selection)
        assert not selection[~mask].any(), "a padded token was selected"
        np.testing.assert_allclose(
            to_numpy(log_prob),
            numpy_log_prob(logits, selection, mask),
            atol=1e-4,
        )
        inference, _ = sampler(x.astype("float32"), mask=mask)
        np.testing.assert_array_equal(to_numpy(inference), (logits > 0) & mask)

    def test_release_0_1_files_keep_relu(self):
        sampler = layers.ReinforcedSequenceSampler(seed=2)
        config = sampler.get_config()
        assert config["activation"] == "elu"
        del config["activation"]
        old = layers.ReinforcedSequenceSampler.from_config(config)
        assert old.activation == "relu"
        x = RNG.normal(size=(2, 5, 4))
        mask = lengths_mask([5, 2], 5)
        _, _, probs = old(
            x.astype("float32"), mask=mask, return_probabilities=True
        )
        logits = numpy_keep_logits(
            x, mask, [to_numpy(w) for w in old.weights], activation="relu"
        )
        np.testing.assert_allclose(
            to_numpy(probs), 1 / (1 + np.exp(-logits)), atol=1e-5
        )

    def test_inference_is_deterministic_and_training_samples(self):
        sampler = layers.ReinforcedSequenceSampler(seed=7)
        x = RNG.normal(size=(4, 16, 4)).astype("float32")
        first, _ = sampler(x)
        second, _ = sampler(x)
        np.testing.assert_array_equal(to_numpy(first), to_numpy(second))
        draws = [to_numpy(sampler(x, training=True)[0]) for _ in range(3)]
        assert any((draws[0] != d).any() for d in draws[1:])

    def test_same_seed_gives_same_samples(self):
        x = RNG.normal(size=(2, 16, 4)).astype("float32")
        a = layers.ReinforcedSequenceSampler(seed=3)
        b = layers.ReinforcedSequenceSampler(seed=3)
        a.build(x.shape)
        b.build(x.shape)
        b.set_weights(a.get_weights())
        np.testing.assert_array_equal(
            to_numpy(a(x, training=True)[0]), to_numpy(b(x, training=True)[0])
        )

    def test_bad_arguments_are_rejected(self):
        with pytest.raises(ValueError, match="Received: threshold=1.5"):
            layers.ReinforcedSequenceSampler(threshold=1.5)
        with pytest.raises(ValueError, match="Received: hidden_dim=-1"):
            layers.ReinforcedSequenceSampler(hidden_dim=-1)
        with pytest.raises(ValueError, match="Received: inference='sampled'"):
            layers.ReinforcedSequenceSampler(inference="sampled")

    def test_inference_rules(self):
        x = RNG.normal(size=(3, 12, 4)).astype("float32")
        mask = lengths_mask([12, 5, 0], 12)
        own = layers.ReinforcedSequenceSampler(seed=3)
        sample = layers.ReinforcedSequenceSampler(seed=3, inference="sample")
        every = layers.ReinforcedSequenceSampler(inference="all")
        for layer in (own, sample, every):
            layer.build(x.shape)
            layer.set_weights(own.get_weights())
        logits = numpy_keep_logits(x, mask, [to_numpy(w) for w in own.weights])
        # "sample" draws at inference exactly what training draws.
        drawn, log_prob = sample(x, mask=mask)
        trained, _ = own(x, mask=mask, training=True)
        np.testing.assert_array_equal(to_numpy(drawn), to_numpy(trained))
        np.testing.assert_allclose(
            to_numpy(log_prob),
            numpy_log_prob(logits, to_numpy(drawn), mask),
            atol=1e-4,
        )
        # "all" keeps every real token and nothing else.
        kept, log_prob = every(x, mask=mask)
        np.testing.assert_array_equal(to_numpy(kept), mask)
        np.testing.assert_allclose(
            to_numpy(log_prob), numpy_log_prob(logits, mask, mask), atol=1e-4
        )
        # The rule is in the config; files saved without it threshold.
        config = sample.get_config()
        assert config["inference"] == "sample"
        assert (
            layers.ReinforcedSequenceSampler.from_config(config).inference
            == "sample"
        )
        del config["inference"]
        old = layers.ReinforcedSequenceSampler.from_config(config)
        assert old.inference == "threshold"
