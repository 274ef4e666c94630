"""The layout's one rule: no import cycle between Hive's packages (or modules), so each
package sits below or beside the ones that use it — executors, reports and notify below the
engine, the shared floor (output, errors, crashsafe, lifecycle) below everything. Four
packages once imported each other in a loop through misplaced helpers (issue 22).

Every import counts, also one inside a function (it is a dependency all the same), except
those under `if TYPE_CHECKING:`, which only name types."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

HIVE = Path(__file__).resolve().parents[2] / "hive"


def _module(path: Path) -> str:
    parts = path.relative_to(HIVE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in HIVE.rglob("*.py")}


def _imports(path: Path) -> set[str]:
    """The Hive modules `path` imports (a name imported from a package counts as that package,
    unless it is a module of it)."""
    tree = ast.parse(path.read_text())
    types_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    here = _module(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in types_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            found |= {f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names}
    return {_known(name) for name in found if name.split(".")[0] == "hive"} - {here, "hive"}


def _known(name: str) -> str:
    while name not in MODULES and "." in name:
        name = name.rpartition(".")[0]
    return name


def _package(module: str) -> str:
    """`hive.engine.runner` -> `engine`; a top-level module is its own package."""
    return module.split(".")[1]


def graphs() -> tuple[nx.DiGraph, nx.DiGraph]:
    modules, packages = nx.DiGraph(), nx.DiGraph()
    for name, path in MODULES.items():
        for target in _imports(path):
            modules.add_edge(name, target)
            if "hive" not in (name, target) and _package(name) != _package(target):
                packages.add_edge(_package(name), _package(target), via=f"{name} -> {target}")
    return modules, packages


def test_no_package_imports_another_that_imports_it_back():
    _, packages = graphs()
    cycles = [sorted(c) for c in nx.strongly_connected_components(packages) if len(c) > 1]
    edges = [
        f"{a} -> {b} ({packages.edges[a, b]['via']})"
        for cycle in cycles
        for a, b in packages.edges
        if a in cycle and b in cycle
    ]
    assert not cycles, "package import cycles: " + "; ".join("/".join(c) for c in cycles) + "\n" + "\n".join(edges)


def test_no_module_imports_another_that_imports_it_back():
    modules, _ = graphs()
    assert not list(nx.simple_cycles(modules))


def test_the_scan_sees_the_imports_it_is_for():
    modules, packages = graphs()
    assert ("hive.engine.runner", "hive.output") in modules.edges  # a module-level `from hive.output import`
    assert packages.has_edge("engine", "executors") and packages.has_edge("dodo", "engine")
    assert len(MODULES) > 100
