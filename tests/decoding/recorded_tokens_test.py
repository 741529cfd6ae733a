"""Every search gives the tokens recorded in `fixtures/recorded_tokens.json`.

The tokens were recorded on each backend from tiny models whose weights
are drawn with NumPy (so they do not depend on a backend's initializers):
greedy search, sampling (seeds, temperature, top-k, top-p), beam search
(with and without the length penalty, n-best), streaming and translation.
A change inside `keras_attention.decoding` that is meant to keep the
searches as they are must keep these tokens.

Record again (only when a change is meant to change tokens) with
`python tests/decoding/recorded_tokens_test.py` once per backend
(`KERAS_BACKEND=...`).
"""

import json
import pathlib

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.models import Transformer
from keras_attention.models import TransformerLanguageModel

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "recorded_tokens.json"
START, END = 1, 2
SOURCES = np.array(
    [[5, 6, 7, 8, 9, 2], [10, 11, 2, 0, 0, 0], [12, 13, 14, 2, 0, 0]], "int32"
)
PROMPTS = np.array([[5, 6, 7, 8], [9, 10, 0, 0], [11, 0, 0, 0]], "int32")
# Translation: a SentencePiece vocabulary of 60 pieces over these lines.
CORPUS = [
    "A man rides a bike.",
    "Two dogs play in the snow.",
    "A woman is reading a book.",
    "Children are playing in the park.",
    "Ein Mann fährt Fahrrad.",
    "Zwei Hunde spielen im Schnee.",
    "Eine Frau liest ein Buch.",
    "Kinder spielen im Park.",
] * 20


def with_numpy_weights(model, seed):
    """`model` with every kernel and embedding matrix drawn from `N(0,
    0.5)` by NumPy (biases and normalization weights stay as built)."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        if "float" in str(weight.dtype) and len(weight.shape) >= 2:
            shape = tuple(weight.shape)
            weight.assign(rng.normal(0.0, 0.5, shape).astype("float32"))
    return model


def translator(vocabulary_size=37):
    model = Transformer(
        vocabulary_size=vocabulary_size,
        num_layers=2,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=32,
    )
    return with_numpy_weights(model, seed=11)


def language_model():
    model = TransformerLanguageModel(
        vocabulary_size=29,
        num_layers=2,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=24,
    )
    return with_numpy_weights(model, seed=13)


def search_cases():
    """`{name: (model kind, inputs, search, keyword arguments)}`."""
    short = {"max_extra_length": 6}
    cases = {}
    for kind, inputs in (("translator", SOURCES), ("lm", PROMPTS)):
        cases[f"{kind}/greedy"] = (kind, inputs, "greedy_search", short)
        cases[f"{kind}/greedy_rules"] = (
            kind,
            inputs,
            "greedy_search",
            dict(short, end_id=[2, 3], min_length=2, no_repeat_ngram_size=2),
        )
        cases[f"{kind}/greedy_uncached"] = (
            kind,
            inputs,
            "greedy_search",
            dict(short, use_cache=False),
        )
        for name, options in (
            ("sample_seed7", dict(seed=7)),
            ("sample_seed8_t0.7", dict(seed=8, temperature=0.7)),
            ("sample_top_k3", dict(seed=7, top_k=3)),
            ("sample_top_p0.8", dict(seed=7, top_p=0.8)),
            ("sample_all", dict(seed=9, temperature=1.3, top_k=5, top_p=0.9)),
            ("sample_t0", dict(seed=7, temperature=0.0)),
        ):
            cases[f"{kind}/{name}"] = (
                kind,
                inputs,
                "sample",
                dict(short, **options),
            )
        for name, options in (
            ("beam3", dict(beam_size=3)),
            ("beam3_alpha0", dict(beam_size=3, alpha=0.0)),
            ("beam1", dict(beam_size=1)),
            ("beam2_nbest", dict(beam_size=2, n_best=True)),
            ("beam3_rules", dict(beam_size=3, min_length=2, end_id=[2, 3])),
        ):
            cases[f"{kind}/{name}"] = (
                kind,
                inputs,
                "beam_search",
                dict(short, **options),
            )
        cases[f"{kind}/stream_greedy"] = (kind, inputs, "stream", short)
        cases[f"{kind}/stream_sample"] = (
            kind,
            inputs,
            "stream",
            dict(short, seed=5, temperature=1.0, top_k=4),
        )
    return cases


def run_case(models, case):
    kind, inputs, search, options = case
    options = dict(options)
    end_id = options.pop("end_id", END)
    model = models[kind]
    if search == "stream":
        steps = decoding.stream(model, inputs, START, end_id, **options)
        return [np.asarray(step).tolist() for step in steps]
    result = getattr(decoding, search)(model, inputs, START, end_id, **options)
    if isinstance(result, tuple):
        tokens, scores = result
        return {
            "tokens": to_list(tokens),
            "scores": np.round(to_numpy(scores), 4).tolist(),
        }
    return to_list(result)


def translations():
    from keras_attention.data import translation

    tokenizer = translation.train_tokenizer(CORPUS, vocabulary_size=60)
    model = translator(vocabulary_size=60)
    sentences = ["A man rides a bike.", "Zwei Hunde.", "Two dogs play."]
    return {
        "translate/beam4": decoding.translate(
            model, tokenizer, sentences, max_extra_length=5
        ),
        "translate/greedy": decoding.translate(
            model, tokenizer, sentences, beam_size=1, max_extra_length=5
        ),
    }


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def to_list(x):
    return to_numpy(x).tolist()


@pytest.fixture(scope="module")
def models():
    return {"translator": translator(), "lm": language_model()}


@pytest.fixture(scope="module")
def recorded():
    recorded = json.loads(FIXTURE.read_text())
    backend = keras.backend.backend()
    if backend not in recorded:
        pytest.skip(f"No tokens recorded on {backend}")
    return recorded[backend]


@pytest.mark.parametrize("name", sorted(search_cases()))
def test_search_gives_the_recorded_tokens(models, recorded, name):
    result = run_case(models, search_cases()[name])
    expected = recorded[name]
    if isinstance(expected, dict):
        assert result["tokens"] == expected["tokens"]
        np.testing.assert_allclose(
            result["scores"], expected["scores"], atol=2e-4
        )
    else:
        assert result == expected


def test_translate_gives_the_recorded_sentences(recorded):
    pytest.importorskip("sentencepiece")
    pytest.importorskip("keras_hub")
    result = translations()
    for name, sentences in result.items():
        assert sentences == recorded[name], name


def test_the_recording_covers_every_search(recorded):
    # The fixture holds what the cases ask for; none is silently missing.
    assert set(search_cases()) <= set(recorded)
    searches = {case[2] for case in search_cases().values()}
    assert searches == {"greedy_search", "sample", "beam_search", "stream"}


def record():
    """Runs every case on the current backend into the fixture."""
    backend = keras.backend.backend()
    models = {"translator": translator(), "lm": language_model()}
    result = {name: run_case(models, c) for name, c in search_cases().items()}
    result.update(translations())
    recorded = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
    recorded[backend] = result
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"Recorded {len(result)} cases on {backend} in {FIXTURE}")


if __name__ == "__main__":
    record()
