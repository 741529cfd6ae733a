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


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph():
    """`{module: set of package modules it imports}`, counting imports
    inside functions (lazy ones). `from a.b import c` is an edge to `a.b.c`
    where that is a module, else to `a.b`; the packages above an imported
    module (which Python initializes first) are not edges of their own,
    or every `from keras_attention.x.y import z` would close a circle
    through `keras_attention/__init__.py`."""
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    graph = {}
    for path in paths:
        edges = set()
        for name in imported_names(path):
            if name in modules:
                edges.add(name)
        # `from a.b import c`: `a.b.c` when it is a module, else `a.b`.
        for name in list(edges):
            if any(e.startswith(name + ".") for e in edges):
                edges.discard(name)
        graph[module_name(path)] = edges - {module_name(path)}
    return graph


def find_cycle(graph):
    """One import cycle of `graph` as a list of modules, or `None`."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return trail[trail.index(target) :] + [target]
            if target not in state:
                found = visit(target, trail + [target])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def test_the_package_import_graph_has_no_cycle():
    graph = import_graph()
    assert "keras_attention.decoding.greedy" in graph
    assert len(graph) >= 50
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_check_counts_lazy_imports():
    # A lazy import inside a function closes a circle as a top-level one.
    graph = {
        "keras_attention.a": {"keras_attention.b"},
        "keras_attention.b": {"keras_attention.c"},
        "keras_attention.c": set(),
    }
    assert find_cycle(graph) is None
    graph["keras_attention.c"] = {"keras_attention.a"}
    assert find_cycle(graph) == [
        "keras_attention.a",
        "keras_attention.b",
        "keras_attention.c",
        "keras_attention.a",
    ]


def test_the_graph_sees_an_import_inside_a_function(tmp_path):
    # `imported_names` walks the whole tree: the lazy import of the old
    # `translate` re-export would be an edge.
    source = tmp_path / "lazy.py"
    source.write_text(
        "def __getattr__(name):\n"
        "    from keras_attention.decoding.translate import translate\n"
    )
    assert "keras_attention.decoding.translate" in imported_names(source)
