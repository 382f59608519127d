"""The layout's rules, read from the source: the framework imports nothing outside lib/, the
package nothing of the development tree (devstack/, tests, bench), no import cycle in the
package (imports inside functions too; TYPE_CHECKING blocks excluded) or in the bench, no module over
300 lines, nothing that needs the driver's JVM in this process."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "lakehouse_assets"
MAX_LINES = 300


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path], module_level: bool) -> set[str]:
    """The package's modules ``name`` imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(nodes: list[ast.stmt]):
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if module_level and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            yield node
            yield from walk([c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)])

    out: set[str] = set()
    for node in walk(tree.body):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            subs = {f"{base}.{a.name}" for a in node.names} & set(known)
            out |= subs or {base}
    return {m for m in out if m in known}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_framework_imports_nothing_outside_lib() -> None:
    known = modules()
    outside = {
        f"{name} imports {dep}"
        for name, path in known.items()
        if name.startswith("lakehouse_assets.lib")
        for dep in imported(name, path, known, module_level=False)
        if not dep.startswith("lakehouse_assets.lib") and dep != "lakehouse_assets"
    }
    assert not outside, sorted(outside)


def test_the_package_imports_no_development_code() -> None:
    """The wheel holds ``lakehouse_assets`` only: ``devstack`` (the local servers), the tests and
    the bench run from the checkout, so nothing in the package may import them."""
    outside = ("devstack", "lakehouse_assets_tests", "verification", "bench", "scripts")
    found = set()
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            found |= {f"{name} imports {n}" for n in names if n.split(".")[0] in outside}
    assert not found, sorted(found)


def test_no_import_cycle() -> None:
    """Imports inside functions count too: a circle hidden in a function is a circle still."""
    known = modules()
    graph = {name: imported(name, path, known, module_level=False) for name, path in known.items()}
    assert "lakehouse_assets.lib.engine.run" in graph["lakehouse_assets.lib.orchestrate.execution"]  # the graph is read
    assert cycles(graph) == []


def test_no_import_cycle_in_the_bench() -> None:
    """``bench/run.py`` and ``bench/report.py`` were a circle once (imports inside functions too)."""
    known = modules(REPO / "bench")
    graph = {name: imported(name, path, known, module_level=False) for name, path in known.items()}
    assert "bench.report" in graph["bench.run"]  # the graph is read
    assert cycles(graph) == []


def test_cycle_detection_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_over_300_lines() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}
    assert len(sizes) > 40  # the whole package was read


def test_nothing_reaches_into_the_driver_jvm() -> None:
    """Every run may be a Spark Connect client: no py4j gateway, ``_jvm`` or ``sparkContext``,
    and no ``DeltaTable`` (it needs Delta's Connect plugin on the server), in the package."""
    forbidden = ("sparkContext", "_jvm", "_gateway", "_jsc", "warm_spark", "delta.tables")
    found = {
        f"{path.relative_to(REPO)}: {word}"
        for path in modules().values()
        for word in forbidden
        if word in path.read_text()
    }
    assert not found, sorted(found)


def test_declarations_run_no_spark_job() -> None:
    """``declare/`` says what a table is; evaluating anything (a check, a count) is the engine's:
    no Spark action and no import of the engine or the Dagster adapter there."""
    actions = (".collect(", ".count()", ".first(", ".take(", ".show(", ".toPandas(", ".read.", ".sql(")
    declare = {n: p for n, p in modules().items() if n.startswith("lakehouse_assets.lib.declare")}
    found = {f"{name}: {word}" for name, path in declare.items() for word in actions if word in path.read_text()}
    assert not found, sorted(found)
    known = modules()
    reaching = {
        f"{name} imports {m}"
        for name, path in declare.items()
        for m in imported(name, path, known, module_level=False)
        if m.startswith(("lakehouse_assets.lib.engine", "lakehouse_assets.lib.orchestrate"))
    }
    assert not reaching, sorted(reaching)
    assert len(declare) > 5


def test_every_check_rule_has_an_evaluator() -> None:
    from typing import get_args

    from lakehouse_assets.lib.declare.checks import CheckRule
    from lakehouse_assets.lib.engine.checks.check_rules import _EVALUATORS

    assert set(get_args(CheckRule)) == set(_EVALUATORS)
