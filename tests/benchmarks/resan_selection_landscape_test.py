import helpers
import numpy as np
import pytest
from keras import ops

from keras_attention import models

landscape = helpers.load_script("benchmarks/resan_selection_landscape.py")


def test_rates_must_be_probabilities():
    assert landscape.parse_rates("0.02, 0.5,0.98") == [0.02, 0.5, 0.98]
    assert landscape.parse_rates("none") == []
    for text in ("0.5,1.0", "0", "", "0.5,-0.1", "0.5,half"):
        with pytest.raises(ValueError, match=f"Received: {text!r}"):
            landscape.parse_rates(text)


def test_fixed_rates_keep_tokens_with_that_probability():
    model = models.ReSANRelatedness(
        vocabulary_size=30, embedding_dim=6, hidden_dim=4, seed=3
    )
    head, dependent = landscape.samplers(model)
    ids = np.random.default_rng(0).integers(1, 30, size=(400, 12))
    vectors = model.encoder.get_layer("word_embedding")(ids)
    for sampler, rate in ((head, 0.14), (dependent, 0.86)):
        landscape.fix_rate(sampler, rate)
        selection, _, probabilities = sampler(
            vectors, training=True, return_probabilities=True
        )
        np.testing.assert_allclose(
            ops.convert_to_numpy(probabilities), rate, rtol=1e-5
        )
        # 4,800 draws: the kept share is within 4 standard errors.
        kept = float(np.mean(ops.convert_to_numpy(selection)))
        assert abs(kept - rate) < 4 * np.sqrt(rate * (1 - rate) / 4800)
    # With the rates fixed, sampling at inference keeps 0.14 x 0.86 of
    # each sentence's pairs; the threshold rule (p = 0.86 > 0.5 for the
    # dependents, 0.14 < 0.5 for the heads) keeps none.
    with models.resan.sampler_inference(model, "sample"):
        first = model.predict({"sentence_a": ids, "sentence_b": ids}, verbose=0)
    after = model.predict({"sentence_a": ids, "sentence_b": ids}, verbose=0)
    expected = 0.14 * 0.86
    assert abs(np.mean(first["selection_percentage"]) - expected) < 0.02
    np.testing.assert_allclose(after["selection_percentage"], 0.0)


def test_keep_rates_report_each_samplers_share_near_the_threshold():
    model = models.ReSANRelatedness(
        vocabulary_size=30, embedding_dim=6, hidden_dim=4, seed=3
    )
    head, dependent = landscape.samplers(model)
    landscape.fix_rate(head, 0.14)
    landscape.fix_rate(dependent, 0.55)
    ids = np.random.default_rng(1).integers(1, 30, size=(20, 9))
    ids[:, 6:] = 0  # padding is not counted
    rates = landscape.keep_rates(model, {"sentence_a": ids}, batch_size=8)
    expected = {
        "head_kept": 0.0,  # 0.14 < 0.5
        "head_keep_probability": 0.14,
        "head_near_threshold": 0.0,
        "dependent_kept": 1.0,  # 0.55 > 0.5
        "dependent_keep_probability": 0.55,
        "dependent_near_threshold": 1.0,  # |0.55 - 0.5| < 0.1
    }
    assert sorted(rates) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(rates[name], value, rtol=1e-5, err_msg=name)
