"""Optional dependencies: every import error names an extra that exists.

The core install is keras and numpy; a feature that needs more imports it
through `keras_attention.utils.optional.import_optional(module, extra,
feature)`. These tests read every such call in the package and check its
extra against `pyproject.toml`, check that nothing imports an optional
module around the helper, and that a missing module gives the message
with the pip command.
"""

import ast
import importlib.metadata
import os
import pathlib
import subprocess
import sys
import tomllib

import keras
import numpy as np
import pytest

from keras_attention.utils import optional

ROOT = pathlib.Path(__file__).parents[2]
PACKAGE = ROOT / "keras_attention"
# The distribution that installs each optional top-level module. A module
# missing here fails `test_every_import_optional_names_its_extra`: add it.
DISTRIBUTIONS = {
    "jax": "jax",
    "keras_hub": "keras-hub",
    "matplotlib": "matplotlib",
    "onnx": "onnx",
    "onnxruntime": "onnxruntime",
    "sacrebleu": "sacrebleu",
    "sacremoses": "sacremoses",
    "scipy": "scipy",
    "sentencepiece": "sentencepiece",
    "sklearn": "scikit-learn",
    "tensorflow": "tensorflow",
    "tensorflow_text": "tensorflow-text",
    "tf2onnx": "tf2onnx",
    "torch": "torch",
}
# Plain imports of optional modules that are allowed, by package path.
PLAIN_IMPORTS_ALLOWED = {
    # TensorFlow-only subpackage, never imported by `keras_attention`.
    "export/": {"tensorflow", "tensorflow_text"},
}
BACKENDS = ("tensorflow", "jax", "torch")


def extras():
    """`[project.optional-dependencies]`, self-references expanded.

    Returns:
        A dict from extra to the set of distribution names it installs.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    table = project["optional-dependencies"]
    own = project["name"]

    def names(extra, seen=()):
        found = set()
        for requirement in table[extra]:
            name = requirement.split(";")[0]
            for stop in "<>=!~ ":
                name = name.split(stop)[0]
            if name.startswith(own + "["):
                for inner in name[len(own) + 1 : -1].split(","):
                    if inner not in seen:
                        found |= names(inner, seen + (extra,))
            else:
                found.add(name.lower().replace("_", "-"))
        return found

    return {extra: names(extra) for extra in table}


def package_files():
    return sorted(PACKAGE.rglob("*.py"))


def import_optional_calls():
    """`(file:line, module, extra)` of every `import_optional` call."""
    calls = []
    for path in package_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = getattr(func, "id", None) or getattr(func, "attr", None)
            if name != "import_optional" or path.name == "optional.py":
                continue
            where = f"{path.relative_to(ROOT).as_posix()}:{node.lineno}"
            arguments = node.args[:2]
            assert len(arguments) == 2 and all(
                isinstance(a, ast.Constant) for a in arguments
            ), f"{where}: module and extra must be string literals"
            calls.append((where, arguments[0].value, arguments[1].value))
    return calls


def test_the_call_sites_are_found():
    modules = {module for _, module, _ in import_optional_calls()}
    assert {"tensorflow", "sacrebleu", "keras_hub", "matplotlib"} <= modules


def test_every_import_optional_names_its_extra():
    table = extras()
    problems = []
    for where, module, extra in import_optional_calls():
        top = module.split(".")[0]
        if extra not in table:
            problems.append(f"{where}: no extra {extra!r} in pyproject.toml")
        elif top not in DISTRIBUTIONS:
            problems.append(f"{where}: add {top!r} to DISTRIBUTIONS")
        elif DISTRIBUTIONS[top] not in table[extra]:
            problems.append(
                f"{where}: extra {extra!r} does not install "
                f"{DISTRIBUTIONS[top]!r} (for {module!r})"
            )
    assert not problems, "\n".join(problems)


def test_the_distribution_names_are_right_where_installed():
    installed = importlib.metadata.packages_distributions()
    checked = 0
    for module, distribution in DISTRIBUTIONS.items():
        if module in installed:
            names = {n.lower() for n in installed[module]}
            assert distribution in names, (module, installed[module])
            checked += 1
    assert checked >= 1


def test_extras_carry_no_exact_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = [
        requirement
        for requirements in project["optional-dependencies"].values()
        for requirement in requirements
        if "==" in requirement
    ]
    assert not pinned, "pins belong in constraints.txt: " + repr(pinned)


def guarded_by_backend(node, parents, module):
    """Whether `node` runs only under `if ... == "<module>":`.

    A backend's module is there when that backend runs (keras imported
    it), so such an import needs no helper.
    """
    child, parent = node, parents.get(node)
    while parent is not None:
        if (
            isinstance(parent, ast.If)
            and child in parent.body
            and isinstance(parent.test, ast.Compare)
            and all(isinstance(op, ast.Eq) for op in parent.test.ops)
            and any(
                isinstance(c, ast.Constant) and c.value == module
                for c in parent.test.comparators
            )
        ):
            return True
        child, parent = parent, parents.get(parent)
    return False


def test_optional_modules_are_imported_through_the_helper():
    plain = []
    for path in package_files():
        relative = path.relative_to(PACKAGE).as_posix()
        allowed = set()
        for prefix, modules in PLAIN_IMPORTS_ALLOWED.items():
            if relative.startswith(prefix):
                allowed |= modules
        tree = ast.parse(path.read_text())
        parents = {
            child: node
            for node in ast.walk(tree)
            for child in ast.iter_child_nodes(node)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in DISTRIBUTIONS or top in allowed:
                    continue
                if top in BACKENDS and guarded_by_backend(node, parents, top):
                    continue
                plain.append(f"{relative}:{node.lineno}: import {name}")
    assert not plain, "use import_optional:\n" + "\n".join(plain)


def test_a_missing_module_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "a_module_nobody_installed", None)
    with pytest.raises(ImportError) as info:
        optional.import_optional(
            "a_module_nobody_installed", "applications", "Some feature"
        )
    message = str(info.value)
    assert message.startswith("Some feature needs `a_module_nobody_installed`")
    assert "pip install 'keras-attention-layers[applications]'" in message


def sacre_bleu():
    from keras_attention import metrics

    metrics.sacre_bleu(["a b"], ["a b"])


def moses_tokenize():
    from keras_attention import metrics

    metrics.moses_tokenize(["a b"])


def plot_alignment():
    from keras_attention import visualization

    visualization.plot_alignment(np.ones((1, 1)), ["a"], ["b"])


def load_tokenizer():
    from keras_attention.data import translation

    translation.load_tokenizer("no-such-file.model")


def as_dataset():
    from keras_attention.data import batching

    pairs = {"inputs": np.ones((4, 3), "int32")}
    batching.BucketedBatches(pairs, batch_size=2).as_dataset()


@pytest.mark.parametrize(
    "call, module, extra",
    [
        (sacre_bleu, "sacrebleu", "applications"),
        (moses_tokenize, "sacremoses", "applications"),
        (plot_alignment, "matplotlib", "applications"),
        (load_tokenizer, "keras_hub", "applications"),
        (as_dataset, "tensorflow", "tensorflow"),
    ],
)
def test_features_name_their_extra_when_a_module_is_missing(
    monkeypatch, call, module, extra
):
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"keras-attention-layers\[") as e:
        call()
    assert f"needs `{module}`" in str(e.value)
    assert f"keras-attention-layers[{extra}]" in str(e.value)


IMPORT_EVERYTHING = """
import importlib
import pkgutil
import sys

for name in ("tensorflow", "tensorflow_text", "keras_hub"):
    sys.modules[name] = None
import keras_attention

names = [
    module.name
    for module in pkgutil.walk_packages(
        keras_attention.__path__, "keras_attention."
    )
    if not module.name.startswith("keras_attention.export")
]
for name in names:
    importlib.import_module(name)
loaded = [n for n, m in sys.modules.items() if n.startswith("tensorflow") and m]
assert not loaded, loaded
print(len(names), "modules")
"""


def test_the_package_imports_without_tensorflow():
    backend = keras.backend.backend()
    if backend == "tensorflow":
        pytest.skip("keras's tensorflow backend needs TensorFlow")
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING],
        env={**os.environ, "KERAS_BACKEND": backend},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.split()[-2]) >= 40
