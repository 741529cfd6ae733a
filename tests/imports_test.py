"""The numerical core never imports training code or argparse.

`keras_attention.ops`, `layers`, `models` and `losses` are what users
build models from; strategies, flags and run folders belong to
`keras_attention.training`, which only training programs import.
"""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).parents[1] / "keras_attention"
CORE = ["ops", "layers", "models", "losses.py"]
FORBIDDEN = ("keras_attention.training", "argparse")


def core_modules():
    paths = []
    for name in CORE:
        path = PACKAGE / name
        paths += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return paths


def imported_names(path):
    """Every module an `import` or `from ... import` in `path` names."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the package path
                parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
                base = ".".join(parts[: len(parts) - node.level])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module
            names.append(module)
            names += [f"{module}.{alias.name}" for alias in node.names]
    return names


def is_forbidden(name):
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def test_the_core_modules_are_found():
    paths = core_modules()
    names = {p.relative_to(PACKAGE).as_posix() for p in paths}
    assert "losses.py" in names
    assert "models/resan/heads.py" in names
    assert "ops/replicas.py" in names
    assert "layers/multi_head_attention.py" in names
    assert len(paths) >= 20


def test_no_core_module_imports_training_or_argparse():
    offending = {
        path.relative_to(PACKAGE).as_posix(): bad
        for path in core_modules()
        if (bad := [n for n in imported_names(path) if is_forbidden(n)])
    }
    assert not offending, offending


def test_the_check_sees_imports_inside_functions(tmp_path):
    # The check walks the whole tree, so a lazy import is caught too.
    module = PACKAGE / "models" / "resan" / "policy.py"
    names = imported_names(module)
    assert "keras_attention.ops.replicas.replica_sum" in names
    source = tmp_path / "lazy.py"
    source.write_text(
        "def f():\n    from keras_attention import training\n"
        "    import argparse\n"
    )
    lazy = [n for n in imported_names(source) if is_forbidden(n)]
    assert lazy == ["keras_attention.training", "argparse"]
