"""Each search is a named value: `Greedy`, `Sampling`, `Beam`."""

import dataclasses
import doctest

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.decoding import specs
from keras_attention.models import TransformerLanguageModel

PROMPTS = np.array([[5, 6, 7], [8, 0, 0]], "int32")


def test_module_examples_run():
    result = doctest.testmod(specs, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0


def test_specs_are_frozen_and_hashable():
    spec = decoding.Beam(start_id=1, end_id=[2, 3], beam_size=3)
    assert spec.end_id == (2, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.beam_size = 4
    same = decoding.Beam(start_id=1, end_id=(2, 3), beam_size=3)
    assert {spec: "a"}[same] == "a"
    assert spec != decoding.Beam(start_id=1, end_id=(2, 3), beam_size=4)
    assert decoding.Greedy() != decoding.Sampling(temperature=0.0)


@pytest.mark.parametrize(
    "cls, arguments, message",
    [
        (decoding.Greedy, {"end_id": 0}, "end_id=0"),
        (decoding.Greedy, {"end_id": []}, r"end_id=\[\]"),
        (decoding.Greedy, {"start_id": -1}, "start_id=-1"),
        (decoding.Greedy, {"max_extra_length": -2}, "max_extra_length=-2"),
        (decoding.Greedy, {"max_length": 0}, "max_length=0"),
        (decoding.Greedy, {"min_length": 1.5}, "min_length=1.5"),
        (decoding.Greedy, {"use_cache": 1}, "use_cache=1"),
        (decoding.Sampling, {"temperature": -1}, "temperature=-1"),
        (decoding.Sampling, {"top_k": 0}, "top_k=0"),
        (decoding.Sampling, {"top_p": 1.5}, "top_p=1.5"),
        (decoding.Sampling, {"seed": "a"}, "seed='a'"),
        (decoding.Beam, {"beam_size": 0}, "beam_size=0"),
        (decoding.Beam, {"alpha": -0.5}, "alpha=-0.5"),
        (decoding.Beam, {"n_best": "yes"}, "n_best='yes'"),
    ],
)
def test_bad_fields_are_named(cls, arguments, message):
    with pytest.raises(ValueError, match=message):
        cls(**arguments)


def test_a_seed_is_not_part_of_the_trace():
    spec = decoding.Sampling(top_k=3, seed=5)
    assert spec.traced() == decoding.Sampling(top_k=3)
    assert decoding.Greedy().traced() == decoding.Greedy()
    # Any int seed, as `keras.random.uniform` takes it.
    assert decoding.Sampling(seed=-3).traced() == decoding.Sampling()


def test_output_length_and_ids():
    keras.utils.set_random_seed(1)
    model = TransformerLanguageModel(
        vocabulary_size=20,
        num_layers=1,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    assert decoding.Greedy().output_length(model, 3) == 16
    assert decoding.Greedy(max_extra_length=4).output_length(model, 3) == 7
    assert decoding.Greedy(max_length=5).output_length(model, 3) == 5
    spec = decoding.Greedy(end_id=4).with_ids(1, 2)
    assert (spec.start_id, spec.end_id) == (1, 4)
    with pytest.raises(ValueError, match="start_id=None"):
        decoding.greedy_search(model, PROMPTS, spec=decoding.Greedy(end_id=2))
    # A spec and the keyword arguments give the same tokens.
    spec = decoding.Sampling(top_k=3, seed=2, max_extra_length=4)
    a = decoding.sample(model, PROMPTS, 1, 2, spec=spec)
    b = decoding.sample(
        model, PROMPTS, 1, 2, top_k=3, seed=2, max_extra_length=4
    )
    np.testing.assert_array_equal(
        ops.convert_to_numpy(a), ops.convert_to_numpy(b)
    )
    # A Greedy spec streams greedily.
    steps = list(decoding.stream(model, PROMPTS, 1, 2, spec=decoding.Greedy()))
    greedy = decoding.greedy_search(model, PROMPTS, 1, 2)
    assert len(steps) >= 1 and ops.shape(greedy)[0] == 2


def test_options_beside_a_spec_are_refused():
    with pytest.raises(ValueError, match="not both.*top_k"):
        decoding.sample(None, PROMPTS, 1, 2, top_k=4, spec=decoding.Sampling())
    with pytest.raises(ValueError, match="must be a `Beam`"):
        decoding.beam_search(None, PROMPTS, 1, 2, spec=decoding.Greedy())
    with pytest.raises(ValueError, match="spec=3"):
        decoding.search(None, PROMPTS, 3)


def test_beam_of_one_is_greedy_with_the_same_fields():
    beam = decoding.Beam(start_id=1, end_id=2, beam_size=1, min_length=2)
    greedy = beam.as_greedy()
    assert isinstance(greedy, decoding.Greedy)
    assert (greedy.start_id, greedy.end_id, greedy.min_length) == (1, 2, 2)
