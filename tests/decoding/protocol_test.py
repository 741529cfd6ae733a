"""The decoding protocol is public: no file calls another file's private
method, and the private names of the old protocol are gone everywhere.
A search's settings and its loop state are named values: nothing reads
them by position."""

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
    # Anywhere in the file, inside functions too.
    offenders = []
    for path in python_files("keras_attention/data"):
        for node in ast.walk(ast.parse(path.read_text())):
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


# Names under which a search's settings, spec, loop state, per-step inputs
# or context travel; none of them may be read by position.
STATE_NAMES = ("settings", "state", "loop", "context", "spec", "inputs")
# Where the searches and the exporters of the package live.
SEARCH_FOLDERS = ("keras_attention/decoding", "keras_attention/export")
SEARCH_KINDS = ("greedy", "sample", "beam", "stream")


def _holder_name(node):
    """`settings` for `settings`, `self.settings`, `context.settings` or
    `greedy_settings`: the last name of a subscripted value."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_position(node):
    """Whether a subscript's index is a position: `3`, `-1`, `2:5`, `1:`."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Slice):
        bounds = [node.lower, node.upper]
        return any(b is not None and _is_position(b) for b in bounds)
    return False


def positional_reads(tree):
    """`(line, text)` of every read by position of a value whose name says
    it is a search's settings or state (`settings[6]`, `state[1:]`,
    `context.state[0]`, `greedy_settings[-1]`, `context["settings"]`)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        name = _holder_name(node.value)
        key = node.slice
        if (
            isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and key.value in ("settings", "state", "spec")
        ):
            yield node.lineno, ast.unparse(node)
        elif name is not None and _is_state_name(name) and _is_position(key):
            yield node.lineno, ast.unparse(node)


def _is_state_name(name):
    return any(
        name == word or name.endswith("_" + word) for word in STATE_NAMES
    )


def settings_tuples(tree):
    """`(line, text)` of tuple literals shaped like the old positional
    settings: a tuple opening with a search's name, `("beam", ...)`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple) and len(node.elts) >= 2:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value in SEARCH_KINDS:
                yield node.lineno, ast.unparse(node)


def test_no_settings_or_state_is_read_by_position():
    offenders = []
    for path in python_files("keras_attention"):
        tree = ast.parse(path.read_text(), str(path))
        for line, text in positional_reads(tree):
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    assert not offenders, "\n".join(offenders)


def test_no_positional_settings_tuple_is_built():
    offenders = []
    for path in python_files(*SEARCH_FOLDERS):
        tree = ast.parse(path.read_text(), str(path))
        for line, text in settings_tuples(tree):
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    assert not offenders, "\n".join(offenders)


def test_the_checks_see_positional_settings_and_state():
    # Not vacuous: each shape of the reads the searches used to make.
    source = (
        "a = settings[6]\n"
        "b = settings[-1]\n"
        "c = state[1:]\n"
        "d = context.state[0]\n"
        "e = context['settings'][2]\n"
        "f = greedy_settings[3]\n"
        "g = loop[4]\n"
        "h = spec.rules\n"  # named: fine
        "i = tokens[:, 1:]\n"  # not settings: fine
        "j = shape[1]\n"
        "k = ('beam', 1, 2)\n"
    )
    tree = ast.parse(source)
    lines = sorted({line for line, _ in positional_reads(tree)})
    assert lines == [1, 2, 3, 4, 5, 6, 7]
    assert [line for line, _ in settings_tuples(tree)] == [11]


def test_export_uses_public_decoding_names_only():
    import keras_attention.decoding as decoding

    offenders = []
    for path in python_files("keras_attention/export"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith("keras_attention.decoding."):
                    offenders.append(f"{path.name}: from {node.module}")
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "decoding"
                and node.attr not in decoding.__all__
            ):
                offenders.append(f"{path.name}:{node.lineno}: {node.attr}")
    assert not offenders, offenders


def test_decoding_imports_no_model_class():
    offenders = []
    for path in python_files("keras_attention/decoding"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [
                    f"{node.module}.{a.name}" for a in node.names
                ]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith(
                    ("keras_attention.models", "keras_attention.layers")
                ):
                    offenders.append(f"{path.name}: {name}")
    assert not offenders, offenders
