"""The decoding protocol is public: no file calls another file's private
method, and the private names of the old protocol are gone everywhere."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "keras_attention"
# The private methods the searches, tests and benchmarks used to call
# across files before `initial_cache` / `decode_step` became the protocol.
OLD_PRIVATE = (
    "_call_with_key_value_cache",
    "_decode_step",
    "_decode_layer_step",
    "_initial_layer_caches",
    "_cross_attention_key_value",
    "_heads_first_key_value",
)


def python_files(*folders):
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def private_methods(tree):
    """Names of the private methods defined in classes of `tree`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if _private(item.name):
                        names.add(item.name)
    return names


def private_calls(tree):
    """`(line, name)` of every `obj._name(...)` call whose receiver is not
    `self`, `cls` or `super()` (a subclass may use its base's helpers)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if not isinstance(func, ast.Attribute) or not _private(func.attr):
            continue
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
            continue
        if (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "super"
        ):
            continue
        yield node.lineno, func.attr


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def test_no_private_method_of_the_package_is_called_from_another_file():
    trees = {
        path: ast.parse(path.read_text(), str(path))
        for path in python_files("keras_attention")
    }
    defined = {path: private_methods(tree) for path, tree in trees.items()}
    everywhere = set().union(*defined.values())
    offenders = []
    for path, tree in trees.items():
        for line, name in private_calls(tree):
            if name in everywhere and name not in defined[path]:
                where = path.relative_to(ROOT)
                offenders.append(f"{where}:{line} calls {name}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("name", OLD_PRIVATE)
def test_old_private_decoding_names_are_gone(name):
    folders = ("keras_attention", "tests", "benchmarks", "applications")
    users = [
        str(path.relative_to(ROOT))
        for path in python_files(*folders)
        if path != pathlib.Path(__file__).resolve()
        and f".{name}(" in path.read_text()
    ]
    assert not users, f"{name} is still called in {users}"


def test_the_check_sees_a_cross_file_private_call():
    # The walk is not vacuous: a call of another file's private method
    # through an object is found, a call through `self` is not.
    caller = ast.parse("def f(block):\n    block._decode(1)\n    self._x()\n")
    assert list(private_calls(caller)) == [(2, "_decode")]
    owner = ast.parse("class A:\n    def _decode(self):\n        pass\n")
    assert private_methods(owner) == {"_decode"}


def test_decoding_is_a_package_of_short_functions():
    decoding = PACKAGE / "decoding"
    assert not (decoding / "search.py").exists()
    long = []
    for path in sorted(decoding.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    long.append(f"{path.name}:{node.name} ({lines} lines)")
    assert not long, long


def test_the_data_package_imports_no_models_or_decoding():
    # At module level: the lazy `translate` re-export imports decoding
    # only when it is used.
    offenders = []
    for path in python_files("keras_attention/data"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith(
                    ("keras_attention.models", "keras_attention.decoding")
                ) or (
                    name == "keras_attention"
                    and isinstance(node, ast.ImportFrom)
                    and any(
                        a.name in ("models", "decoding") for a in node.names
                    )
                ):
                    offenders.append(f"{path.name}: {name}")
    assert not offenders, offenders
