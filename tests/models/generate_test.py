"""`Transformer.generate` and `TransformerLanguageModel.generate`."""

import doctest
import inspect
import logging

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.decoding import beam as beam_module
from keras_attention.decoding import generation
from keras_attention.decoding import greedy as greedy_module
from keras_attention.decoding import loop
from keras_attention.models import Transformer
from keras_attention.models import TransformerLanguageModel

START, END = 1, 2
SIZES = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32)
# Widths 3 and 5 (not multiples of 8, so generate pads them).
PROMPTS = np.array([[5, 6, 7], [9, 10, 0], [11, 0, 0]], "int32")
SOURCES = np.array(
    [[5, 6, 7, 8, 2], [10, 11, 2, 0, 0], [12, 13, 14, 2, 0]], "int32"
)


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.fixture(scope="module")
def lm():
    keras.utils.set_random_seed(7)
    return TransformerLanguageModel(
        vocabulary_size=31, max_sequence_length=24, **SIZES
    )


@pytest.fixture(scope="module")
def translator():
    keras.utils.set_random_seed(8)
    return Transformer(vocabulary_size=31, max_sequence_length=24, **SIZES)


@pytest.mark.parametrize("kind", ["lm", "translator"])
def test_greedy_gives_the_tokens_of_greedy_search(kind, lm, translator):
    model, inputs = (lm, PROMPTS) if kind == "lm" else (translator, SOURCES)
    for extra in (50, 4):
        spec = decoding.Greedy(max_extra_length=extra)
        got = model.generate(inputs, spec, start_id=START, end_id=END)
        expected = decoding.greedy_search(
            model, inputs, START, END, max_extra_length=extra
        )
        assert isinstance(got, np.ndarray) and got.dtype == np.int32
        np.testing.assert_array_equal(got, to_numpy(expected))


@pytest.mark.parametrize("kind", ["lm", "translator"])
def test_sampling_and_beam_give_the_tokens_of_the_searches(
    kind, lm, translator
):
    model, inputs = (lm, PROMPTS) if kind == "lm" else (translator, SOURCES)
    spec = decoding.Sampling(
        start_id=START, end_id=END, top_k=5, seed=3, max_extra_length=5
    )
    np.testing.assert_array_equal(
        model.generate(inputs, spec),
        to_numpy(decoding.sample(model, inputs, spec=spec)),
    )
    spec = decoding.Beam(start_id=START, end_id=END, max_extra_length=4)
    np.testing.assert_array_equal(
        model.generate(inputs, spec),
        to_numpy(decoding.beam_search(model, inputs, spec=spec)),
    )


def test_a_second_call_does_not_retrace(lm, monkeypatch):
    # The search's Python body runs once per trace on tensorflow and jax;
    # torch runs it eagerly at every call, from the same kept function.
    calls = []
    token_loop = greedy_module.token_loop

    def counting(*args, **kwargs):
        calls.append(ops.shape(args[2])[1])  # the padded width
        return token_loop(*args, **kwargs)

    monkeypatch.setattr(greedy_module, "token_loop", counting)
    spec = decoding.Greedy(start_id=START, end_id=END, max_extra_length=3)
    with loop.fresh_traces(lm):
        lm.generate(PROMPTS, spec)
        lm.generate(PROMPTS[:, :2], spec)  # width 2: the same bucket, 8
        kept = dict(loop._COMPILED[lm])
        lm.generate(np.pad(PROMPTS, [[0, 0], [0, 7]]), spec)  # bucket 16
        assert dict(loop._COMPILED[lm]) == kept  # one function per spec
        assert len(kept) == 1
    if keras.backend.backend() == "torch":
        assert calls == [8, 8, 16]
    else:
        assert calls == [8, 16]


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="tf.function's frequent-retracing warning",
)
def test_one_trace_per_bucket_without_a_retracing_warning(monkeypatch):
    # Six buckets: six traces of one search, as designed, and none of
    # tensorflow's "triggered tf.function retracing" warnings (the
    # translation demo printed one as it decoded its test sets).
    traced_widths = []
    beam_start = beam_module.beam_start

    def counting(model, ids, spec):
        traced_widths.append(ids.shape[1])
        return beam_start(model, ids, spec)

    monkeypatch.setattr(beam_module, "beam_start", counting)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    tf_logger = logging.getLogger("tensorflow")
    tf_logger.addHandler(handler)
    model = Transformer(vocabulary_size=31, max_sequence_length=64, **SIZES)
    spec = decoding.Beam(start_id=START, end_id=END, max_extra_length=2)
    try:
        for width in (3, 9, 17, 25, 33, 41, 4, 10):
            sources = np.pad(SOURCES, [[0, 0], [0, max(width - 5, 0)]])
            model.generate(sources[:, :width], spec)
    finally:
        tf_logger.removeHandler(handler)
    assert traced_widths == [8, 16, 24, 32, 40, 48]
    assert len(loop._COMPILED[model]) == 1
    messages = [record.getMessage() for record in records]
    assert not [m for m in messages if "retracing" in m], messages


def test_search_names_have_keras_hub_defaults():
    samplers = pytest.importorskip("keras_hub").samplers

    def default(cls, name):
        return inspect.signature(cls.__init__).parameters[name].default

    searches = generation.SEARCHES
    assert searches["greedy"] == decoding.Greedy()
    assert searches["top_k"].top_k == default(samplers.TopKSampler, "k")
    assert searches["top_p"].top_p == default(samplers.TopPSampler, "p")
    assert searches["top_p"].top_k == default(samplers.TopPSampler, "k")
    beams = default(samplers.BeamSampler, "num_beams")
    assert searches["beam"].beam_size == beams
    temperature = default(samplers.Sampler, "temperature")
    assert searches["top_k"].temperature == temperature
    assert searches["top_p"].temperature == temperature


@pytest.mark.parametrize("name", ["greedy", "beam", "top_k", "top_p"])
def test_search_names_run(lm, name):
    tokens = lm.generate(PROMPTS, name, start_id=START, end_id=END)
    assert tokens.shape[0] == 3
    spec = generation.SEARCHES[name]
    width = min(spec.max_extra_length, lm.max_sequence_length)
    assert tokens.shape == (3, width)
    # Every row ends with the end id within its limit.
    assert all(END in row.tolist() for row in tokens)


def test_bad_arguments_are_clear_errors(lm):
    with pytest.raises(ValueError, match="search='nucleus'"):
        lm.generate(PROMPTS, "nucleus", start_id=START, end_id=END)
    with pytest.raises(ValueError, match="Strings need a tokenizer"):
        lm.generate(["a b"], start_id=START, end_id=END)
    with pytest.raises(ValueError, match="start_id=None"):
        lm.generate(PROMPTS)
    with pytest.raises(ValueError, match="shape \\(3,\\)"):
        lm.generate(PROMPTS[:, 0], start_id=START, end_id=END)


def test_the_tokenizer_is_not_tracked(lm, tmp_path):
    keras_hub = pytest.importorskip("keras_hub")
    weights = [w.path for w in lm.weights]
    layers = [layer.name for layer in lm.layers]
    tokenizer = keras_hub.tokenizers.ByteTokenizer()
    lm.tokenizer = tokenizer
    try:
        assert lm.tokenizer is tokenizer
        assert [w.path for w in lm.weights] == weights
        assert [layer.name for layer in lm.layers] == layers
        path = str(tmp_path / "lm.keras")
        lm.save(path)
        reloaded = keras.saving.load_model(path)
        assert reloaded.tokenizer is None
        assert [w.path for w in reloaded.weights] == weights
    finally:
        lm.tokenizer = None
    assert lm.tokenizer is None


CORPUS = [
    "A man rides a bike.",
    "Two dogs play in the snow.",
    "A woman is reading a book.",
    "Children are playing in the park.",
] * 20


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("keras_hub")
    pytest.importorskip("sentencepiece")
    from keras_attention.data import translation

    return translation.train_tokenizer(CORPUS, vocabulary_size=32)


def test_strings_in_strings_out_with_the_translation_tokenizer(tokenizer):
    keras.utils.set_random_seed(9)
    model = Transformer(vocabulary_size=32, max_sequence_length=24, **SIZES)
    model.tokenizer = tokenizer
    sentences = ["A man rides a bike.", "Two dogs play."]
    texts = model.generate(sentences)
    assert isinstance(texts, list) and len(texts) == 2
    assert all(isinstance(text, str) for text in texts)
    # The start and end ids of the recipe, found from `<s>` and `</s>`.
    expected = decoding.translate(model, tokenizer, sentences, beam_size=1)
    assert texts == expected
    assert model.generate(sentences[0]) == expected[0]


def test_strings_in_strings_out_for_a_language_model(tokenizer):
    keras.utils.set_random_seed(10)
    lm = TransformerLanguageModel(
        vocabulary_size=32, max_sequence_length=24, **SIZES
    )
    lm.tokenizer = tokenizer
    spec = decoding.Greedy(max_extra_length=6)
    text = lm.generate("A man", spec)
    ids = tokenizer.tokenize(["A man"])
    prompts = np.array([generation._ints(generation._rows(ids)[0])], "int32")
    tokens = decoding.greedy_search(lm, prompts, 2, 3, max_extra_length=6)
    (row,) = decoding.strip_special(tokens, 3)
    assert text == (generation.decode(tokenizer, [row + [3]], (3,))[0])
    assert isinstance(text, str)


@pytest.mark.parametrize(
    "method", [Transformer.generate, TransformerLanguageModel.generate]
)
def test_docstring_examples_run(method):
    module = inspect.getmodule(method)
    globs = dict(vars(module), keras=keras, np=np)
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(method, method.__qualname__, globs=globs)]
    assert sum(len(t.examples) for t in tests) >= 4
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
