"""A `.keras` file written on one backend loads on the others.

`tests/run_backends.py` runs the suite once per backend and points
`KERAS_ATTENTION_CROSS_DIR` at one folder for all runs. Each run saves the
models below with their outputs there (once: a later run on the same backend
keeps the files), then reloads every model that another backend saved and
checks that it gives the same outputs. The backends' runs may go side by
side, so a file appears under its name only once it is whole, and the
outputs before the model; after them the runner runs this module again on
each backend, and then every backend loads the files of all the others.
"""

import os
import pathlib

import keras
import numpy as np
import pytest

from keras_attention import data
from keras_attention import layers
from keras_attention import models
from keras_attention.testing import build_model

RNG = np.random.default_rng(11)
X = RNG.normal(size=(2, 5, 8)).astype("float32")
MASK = np.array([[True] * 5, [True, True, True, False, False]])
IDS = np.array([[4, 2, 7, 0], [3, 0, 0, 0]], "int32")

MODELS = {
    "multi_head_attention": (
        lambda: layers.MultiHeadAttention(2, 4, sliding_window=3),
        {"query": X, "value": X, "query_mask": MASK, "value_mask": MASK},
        {"use_causal_mask": True},
    ),
    "token_and_position_embedding": (
        lambda: layers.TokenAndPositionEmbedding(
            10,
            embedding_dim=8,
            sequence_length=6,
            position="learned",
            mask_zero=True,
        ),
        IDS,
        {},
    ),
    "sinusoidal_position_encoding": (
        lambda: layers.SinusoidalPositionEncoding(),
        X,
        {},
    ),
}

CROSS_DIR = os.environ.get("KERAS_ATTENTION_CROSS_DIR")
BACKEND = keras.backend.backend()
pytestmark = pytest.mark.skipif(
    not CROSS_DIR,
    reason="KERAS_ATTENTION_CROSS_DIR is not set (tests/run_backends.py sets "
    "it so that the backends' runs share saved models)",
)


def _inputs(data):
    return dict(data) if isinstance(data, dict) else data


def _outputs(model, data):
    outputs = model(_inputs(data))
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    return [np.asarray(keras.ops.convert_to_numpy(o)) for o in outputs]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_saved_model_loads_on_other_backends(name):
    make_layer, data, call_kwargs = MODELS[name]
    folder = pathlib.Path(CROSS_DIR)
    own = folder / BACKEND
    own.mkdir(parents=True, exist_ok=True)
    if not (own / f"{name}.keras").exists():
        model = build_model(make_layer(), data, call_kwargs)
        partial = own / f"{name}.partial"
        np.savez(partial.with_suffix(".npz"), *_outputs(model, data))
        os.replace(partial.with_suffix(".npz"), own / f"{name}.npz")
        model.save(partial.with_suffix(".keras"))
        os.replace(partial.with_suffix(".keras"), own / f"{name}.keras")

    others = [
        path
        for path in sorted(folder.glob(f"*/{name}.keras"))
        if path.parent.name != BACKEND
    ]
    if not others:
        pytest.skip(f"no other backend has saved {name} yet (saved it)")
    for path in others:
        revived = keras.saving.load_model(path, safe_mode=True)
        expected = np.load(path.with_suffix(".npz"))
        actual = _outputs(revived, data)
        for index, value in enumerate(actual):
            np.testing.assert_allclose(
                value,
                expected[f"arr_{index}"],
                atol=1e-5,
                err_msg=f"{name} saved on {path.parent.name}",
            )


def test_preset_loads_on_other_backends():
    # A preset folder (keras_attention.presets) with its tokenizer.
    folder = pathlib.Path(CROSS_DIR)
    own = folder / BACKEND / "language_model_preset"
    if not own.exists():
        model = models.TransformerLanguageModel(
            vocabulary_size=12,
            num_layers=1,
            hidden_dim=8,
            num_heads=2,
            intermediate_dim=16,
            seed=2,
        )
        model.tokenizer = data.WordTokenizer(["<pad>", "<unk>", "a", "b"])
        partial = own.with_name("language_model_preset.partial")
        model.save_to_preset(partial)
        np.save(partial / "outputs.npy", _outputs(model, IDS)[0])
        os.replace(partial, own)
    others = [
        path
        for path in sorted(folder.glob("*/language_model_preset"))
        if path.parent.name != BACKEND
    ]
    if not others:
        pytest.skip("no other backend has saved the preset yet (saved it)")
    for path in others:
        revived = models.TransformerLanguageModel.from_preset(str(path))
        np.testing.assert_allclose(
            _outputs(revived, IDS)[0],
            np.load(path / "outputs.npy"),
            atol=1e-5,
            err_msg=f"preset saved on {path.parent.name}",
        )
        assert revived.tokenizer.get_vocabulary() == [
            "<pad>",
            "<unk>",
            "a",
            "b",
        ]
