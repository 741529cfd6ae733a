"""Cross-cutting checks over every public layer and op."""

import doctest
import inspect
import pathlib
import re

import keras
import numpy as np
import pytest

import keras_attention
from keras_attention import layers
from keras_attention import ops

TESTS = pathlib.Path(__file__).parent
LAYERS = [getattr(layers, name) for name in layers.__all__]
SECTIONS = ("Args:", "Call arguments:", "Returns:", "Example:", "References:")


def snake_case(name):
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def test_every_public_layer_is_exported_once():
    assert len(set(layers.__all__)) == len(layers.__all__)
    for layer_cls in LAYERS:
        assert issubclass(layer_cls, keras.layers.Layer), layer_cls


@pytest.mark.parametrize("layer_cls", LAYERS, ids=lambda c: c.__name__)
def test_layer_is_registered_serializable(layer_cls):
    name = keras.saving.get_registered_name(layer_cls)
    assert name == f"keras_attention>{layer_cls.__name__}"
    assert keras.saving.get_registered_object(name) is layer_cls


@pytest.mark.parametrize("layer_cls", LAYERS, ids=lambda c: c.__name__)
def test_layer_is_documented(layer_cls):
    doc = inspect.getdoc(layer_cls) or ""
    missing = [section for section in SECTIONS if section not in doc]
    assert not missing, f"{layer_cls.__name__} docstring lacks {missing}"
    assert ">>>" in doc, f"{layer_cls.__name__} has no runnable example"
    assert "arxiv.org" in doc, f"{layer_cls.__name__} cites no paper"
    if layer_cls.__init__.__doc__:
        pytest.fail("Document constructor arguments in the class docstring")


@pytest.mark.parametrize("layer_cls", LAYERS, ids=lambda c: c.__name__)
def test_layer_has_a_layer_test_case(layer_cls):
    module = layer_cls.__module__.rsplit(".", 1)[-1]
    expected = snake_case(layer_cls.__name__)
    assert module == expected, f"{layer_cls.__name__} belongs in {expected}.py"
    test_file = TESTS / "layers" / f"{module}_test.py"
    assert test_file.exists(), f"missing {test_file.name}"
    text = test_file.read_text()
    assert "run_layer_test(" in text and layer_cls.__name__ in text


def _documented_objects():
    objects = [
        (f"layers.{name}", getattr(layers, name)) for name in layers.__all__
    ]
    objects += [(f"ops.{name}", getattr(ops, name)) for name in ops.__all__]
    for extra in ("models", "losses", "schedules", "optimizers", "presets"):
        module = getattr(keras_attention, extra, None)
        for name in getattr(module, "__all__", []):
            objects.append((f"{extra}.{name}", getattr(module, name)))
    return objects


@pytest.mark.parametrize(
    "name, obj",
    _documented_objects(),
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_docstring_examples_run(name, obj):
    module = inspect.getmodule(obj)
    globs = dict(vars(module))
    globs.update({"keras": keras, "np": np})
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(obj, name, globs=globs) if t.examples]
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, (
        f"{result.failed} docstring example(s) of {name} failed"
    )
