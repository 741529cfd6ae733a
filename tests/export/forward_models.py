"""The forward models that `onnx_test.py` and `litert_test.py` export.

Each is tiny and takes padded token ids (id 0 is padding), so an export
that mishandled padding would give other numbers than Keras. The exported
file is run in its own runtime and its outputs are compared with the Keras
outputs, name by name.
"""

import keras
import numpy as np
import pytest

from keras_attention import models

BACKEND = keras.backend.backend()
ATOL = 1e-5
PAIR = {
    "premise": np.array([[3, 4, 5, 0], [6, 7, 0, 0]], "int32"),
    "hypothesis": np.array([[3, 9, 0], [2, 8, 11]], "int32"),
}


def decomposable_attention():
    return models.decomposable_attention_model(
        20, embedding_dim=8, hidden_dim=8, seed=0
    ), PAIR


def intra_attention():
    return models.decomposable_attention_model(
        20, embedding_dim=8, hidden_dim=8, intra_attention=True, seed=0
    ), PAIR


def bag_of_words():
    return models.bag_of_words_model(
        20, embedding_dim=8, hidden_dim=8, seed=0
    ), PAIR


def transformer_encoder():
    """The encoder of a `Transformer` as a model: ids -> `(B, S, F)`."""
    transformer = models.Transformer(
        vocabulary_size=20,
        num_layers=1,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=16,
        max_sequence_length=16,
        seed=0,
    )
    token_ids = keras.Input((None,), dtype="int32", name="encoder_token_ids")
    padding_mask = keras.ops.not_equal(token_ids, 0)
    x = transformer.token_embedding(token_ids)
    for block in transformer.encoder_blocks:
        x = block(x, padding_mask=padding_mask)
    model = keras.Model({"encoder_token_ids": token_ids}, x)
    return model, {"encoder_token_ids": PAIR["premise"]}


def resan_classifier():
    return models.ReSANClassifier(
        20, embedding_dim=8, hidden_dim=4, seed=0
    ), PAIR


def resan_relatedness():
    inputs = {"sentence_a": PAIR["premise"], "sentence_b": PAIR["hypothesis"]}
    return models.ReSANRelatedness(
        20, embedding_dim=8, hidden_dim=4, seed=0
    ), inputs


MODELS = {
    "decomposable_attention": decomposable_attention,
    "intra_attention": intra_attention,
    "bag_of_words": bag_of_words,
    "transformer_encoder": transformer_encoder,
    "resan_classifier": resan_classifier,
    "resan_relatedness": resan_relatedness,
}


def keras_outputs(model, inputs):
    """The inference outputs as NumPy: a dict for dict outputs."""
    outputs = model(inputs, training=False)
    return keras.tree.map_structure(keras.ops.convert_to_numpy, outputs)


def fixed_signature(inputs):
    """An input signature with the shapes of `inputs` (no `None`)."""
    return [
        {
            name: keras.InputSpec(shape=value.shape, dtype="int32", name=name)
            for name, value in inputs.items()
        }
    ]


def export_or_skip(model, path, fmt, known=None, **kwargs):
    """`model.export`, skipping with the error only when it is `known`."""
    try:
        model.export(str(path), format=fmt, verbose=False, **kwargs)
    except Exception as error:  # the converters' own exception types
        skip_if_known(error, known, fmt)
        raise


def skip_if_known(error, known, what):
    """Skips with `error` if its text holds `known` (a string or a tuple
    of alternatives); returns otherwise."""
    text = " ".join(str(error).split())
    found = [k for k in ((known,) if isinstance(known, str) else known or ())]
    found = [k for k in found if k in text]
    if found:
        start = max(text.index(found[0]) - 100, 0)
        pytest.skip(
            f"{what} fails on {BACKEND}: {type(error).__name__}: "
            f"{text[start : start + 300]}"
        )


def feed(names, inputs):
    """Maps each runtime input name to the array of the input it names.

    Runtimes name inputs after the model's (`premise`) or prefix them
    (`args_0_premise`, torch's LiteRT export).
    """
    fed = {}
    for name in names:
        keys = [k for k in inputs if name == k or name.endswith("_" + k)]
        if len(keys) != 1:
            raise ValueError(
                f"The exported model has an input {name!r} that the Keras "
                f"model does not have. Keras inputs: {sorted(inputs)}"
            )
        fed[name] = inputs[keys[0]]
    return fed


def assert_outputs_match(actual, expected):
    """`actual`: runtime name -> array; `expected`: the Keras outputs.

    A model with one output must give one array; a model with a dict of
    outputs must give the same names.
    """
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected)
        for name, value in expected.items():
            np.testing.assert_allclose(
                actual[name], value, atol=ATOL, rtol=0, err_msg=name
            )
    else:
        (value,) = actual.values()
        np.testing.assert_allclose(value, expected, atol=ATOL, rtol=0)
