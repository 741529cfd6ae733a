"""Smoke test of an installed keras_attention, through its public API.

Runs the first Python example of the README (as the installed distribution
ships it, in its long description), one training step of each model
family on tiny random data, a `.keras` save and reload with equal outputs
for each, and a greedy search with the language model.

Run it from outside the source tree, so that the installed distribution
is the one imported (`.ci/wheel_smoke` does, in a fresh environment per
backend):

    KERAS_BACKEND=jax python smoke.py --no-tensorflow --installed

pytest does not collect this file (it collects `*_test.py`).
"""

import argparse
import importlib.metadata
import importlib.util
import os
import re
import sys
import tempfile

import keras
import numpy as np

import keras_attention
from keras_attention import decoding
from keras_attention import models

DISTRIBUTION = "keras-attention-layers"
RNG = np.random.default_rng(0)
VOCABULARY = 30
# The checks that passed; the first failure ends the run with a traceback.
PASSED = []


def readme_example():
    """The first fenced Python block of the installed long description."""
    metadata = importlib.metadata.metadata(DISTRIBUTION)
    text = metadata.get_payload() or metadata.get("Description") or ""
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    if not blocks:
        raise AssertionError(
            f"The long description of {DISTRIBUTION} has no ```python "
            "block: is README.md its readme?"
        )
    return blocks[0]


def token_ids(rows, length):
    """Random ids in `[1, VOCABULARY)`, each row padded with 0 at the end."""
    ids = RNG.integers(1, VOCABULARY, size=(rows, length))
    lengths = RNG.integers(1, length + 1, size=(rows, 1))
    return np.where(np.arange(length) < lengths, ids, 0).astype("int32")


def pairs(first="premise", second="hypothesis"):
    return {first: token_ids(8, 6), second: token_ids(8, 5)}


def numpy_outputs(model, x):
    outputs = keras.tree.flatten(model(x, training=False))
    return [np.asarray(keras.ops.convert_to_numpy(o)) for o in outputs]


def fit_save_reload(name, model, x, y, loss, directory):
    """One training step, then a `.keras` round trip with equal outputs."""
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss)
    before = [np.array(w) for w in model.get_weights()]
    history = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    step_loss = history.history["loss"][-1]
    assert np.isfinite(step_loss), (name, step_loss)
    after = model.get_weights()
    assert any(not np.array_equal(b, a) for b, a in zip(before, after)), (
        f"{name}: one training step moved no weight"
    )
    path = os.path.join(directory, f"{name}.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path, safe_mode=True)
    for ours, theirs in zip(
        numpy_outputs(model, x), numpy_outputs(reloaded, x)
    ):
        np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-6)
    print(f"{name}: one step (loss {step_loss:.4f}), .keras reload equal")
    PASSED.append(name)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--no-tensorflow",
        action="store_true",
        help="fail if TensorFlow is installed or gets imported",
    )
    parser.add_argument(
        "--installed",
        action="store_true",
        help="fail if keras_attention is imported from a source tree",
    )
    args = parser.parse_args()
    if args.no_tensorflow:
        assert importlib.util.find_spec("tensorflow") is None, (
            "TensorFlow is installed"
        )
    package = os.path.dirname(keras_attention.__file__)
    source_tree = os.path.isfile(os.path.join(package, "..", "pyproject.toml"))
    if args.installed:
        assert not source_tree, f"keras_attention imported from {package}"
    version = importlib.metadata.version(DISTRIBUTION)
    print(
        f"{DISTRIBUTION} {version} from {package}, "
        f"keras {keras.__version__}, backend {keras.backend.backend()}"
    )
    keras.utils.set_random_seed(0)

    with tempfile.TemporaryDirectory() as directory:
        cwd = os.getcwd()
        os.chdir(directory)  # the example may write files
        try:
            exec(readme_example(), {"__name__": "readme_example"})
        finally:
            os.chdir(cwd)
        print("README example: ran")
        PASSED.append("readme_example")

        sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        tiny = dict(
            vocabulary_size=VOCABULARY,
            num_layers=1,
            hidden_dim=8,
            num_heads=2,
            intermediate_dim=16,
            max_sequence_length=16,
        )
        fit_save_reload(
            "transformer",
            models.Transformer(**tiny),
            {
                "encoder_token_ids": token_ids(8, 6),
                "decoder_token_ids": token_ids(8, 5),
            },
            token_ids(8, 5),
            sparse,
            directory,
        )
        sequences = token_ids(8, 7)
        language_model = fit_save_reload(
            "transformer_language_model",
            models.TransformerLanguageModel(**tiny),
            sequences[:, :-1],
            sequences[:, 1:],
            sparse,
            directory,
        )
        labels = RNG.integers(0, 3, size=(8,)).astype("int32")
        fit_save_reload(
            "resan_classifier",
            models.ReSANClassifier(
                vocabulary_size=VOCABULARY, embedding_dim=8, hidden_dim=6
            ),
            pairs(),
            labels,
            "sparse_categorical_crossentropy",
            directory,
        )
        fit_save_reload(
            "resan_relatedness",
            models.ReSANRelatedness(
                vocabulary_size=VOCABULARY, embedding_dim=8, hidden_dim=6
            ),
            pairs("sentence_a", "sentence_b"),
            RNG.uniform(1, 5, size=(8,)).astype("float32"),
            None,  # the model's own task loss
            directory,
        )
        for intra_attention in (False, True):
            fit_save_reload(
                "decomposable_attention"
                + ("_intra" if intra_attention else ""),
                models.decomposable_attention_model(
                    vocabulary_size=VOCABULARY,
                    embedding_dim=6,
                    hidden_dim=8,
                    intra_attention=intra_attention,
                ),
                pairs(),
                labels,
                "sparse_categorical_crossentropy",
                directory,
            )
        fit_save_reload(
            "bag_of_words",
            models.bag_of_words_model(
                vocabulary_size=VOCABULARY, embedding_dim=6, hidden_dim=8
            ),
            pairs(),
            labels,
            "sparse_categorical_crossentropy",
            directory,
        )

    prompts = token_ids(2, 4)
    continuations = keras.ops.convert_to_numpy(
        decoding.greedy_search(
            language_model, prompts, start_id=1, end_id=2, max_extra_length=3
        )
    )
    assert continuations.shape[0] == 2 and continuations.shape[1] >= 1
    assert continuations.dtype == np.int32, continuations.dtype
    print(f"greedy_search: continuations of shape {continuations.shape}")
    PASSED.append("greedy_search")

    if args.no_tensorflow:
        loaded = sorted(n for n in sys.modules if n.startswith("tensorflow"))
        assert not loaded, f"imported: {loaded}"
        PASSED.append("no_tensorflow")
    print(f"smoke: {len(PASSED)} passed, 0 failed")


if __name__ == "__main__":
    main()
