"""Every public layer is used by a tutorial or a docstring example run in CI.

Tutorials count when the layer's class name appears in their code (not
only in their prose); `tests/tutorials_test.py` runs every tutorial.
Docstring examples count when a `>>>` example constructs the layer and the
docstring is one that `tests/public_api_test.py` runs.
"""

import ast
import doctest
import pathlib
import re

import helpers

from keras_attention import layers

ROOT = pathlib.Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "tutorials"
PUBLIC_API_TEST = ROOT / "tests" / "public_api_test.py"


def code_identifiers(source):
    """Names and attribute names used in the code of a Python source."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.name.rsplit(".", 1)[-1])
    return names


def constructed_in_examples(examples, class_name):
    """Whether a doctest example calls `class_name(...)`."""
    pattern = re.compile(rf"\b{re.escape(class_name)}\s*\(")
    return any(pattern.search(example.source) for example in examples)


def documented_objects():
    """The `(name, object)` pairs whose docstring examples CI runs."""
    module = helpers.load_script(PUBLIC_API_TEST, "public_api_test")
    return module._documented_objects()


def doctest_examples():
    finder = doctest.DocTestFinder(recurse=False)
    examples = {}
    for name, obj in documented_objects():
        tests = finder.find(obj, name, globs={})
        examples[name] = [e for test in tests for e in test.examples]
    return examples


def test_code_identifiers_ignore_prose():
    source = (
        '"""Uses SoftAlignment in prose only."""\n'
        "from keras_attention.layers import FusionGate\n"
        "x = layers.MultiHeadAttention(num_heads=2)\n"
        "assert isinstance(x, Source2TokenAttention)\n"
    )
    found = code_identifiers(source)
    assert {"FusionGate", "MultiHeadAttention", "Source2TokenAttention"} <= (
        found
    )
    assert "SoftAlignment" not in found


def test_examples_count_only_constructions():
    parser = doctest.DocTestParser()
    examples = parser.get_examples(
        ">>> layer = FusionGate()\n>>> print(SoftAlignment)\n"
    )
    assert constructed_in_examples(examples, "FusionGate")
    assert not constructed_in_examples(examples, "SoftAlignment")


def test_every_public_layer_is_used_by_a_tutorial_or_docstring_example():
    tutorial_names = {
        path.name: code_identifiers(path.read_text(encoding="utf-8"))
        for path in sorted(TUTORIALS.glob("*.py"))
    }
    examples = doctest_examples()
    uncovered = []
    for class_name in layers.__all__:
        in_tutorials = [
            name
            for name, found in tutorial_names.items()
            if class_name in found
        ]
        in_docstrings = [
            name
            for name, found in examples.items()
            if constructed_in_examples(found, class_name)
        ]
        if not in_tutorials and not in_docstrings:
            uncovered.append(class_name)
    assert not uncovered, (
        f"Public layers used by no tutorial and no docstring example that "
        f"CI runs: {uncovered}"
    )
