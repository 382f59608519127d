"""Behaviour that varies by the kind of a sink or an input lives in its registered strategy: no
module of the framework tells sinks or inputs apart by their type (``isinstance``, ``issubclass``,
``type(...)``) but the modules that declare the kinds and the engine's two registries. Every kind
declared has a strategy registered."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from lakehouse_assets.lib.declare import inputs, kafka_inputs, landing_inputs, sinks
from lakehouse_assets_tests.framework.test_architecture import PACKAGE, modules

pytestmark = pytest.mark.unit

REGISTRIES = {
    "lakehouse_assets.lib.declare.inputs",
    "lakehouse_assets.lib.declare.kafka_inputs",
    "lakehouse_assets.lib.declare.landing_inputs",
    "lakehouse_assets.lib.declare.sinks",
    "lakehouse_assets.lib.engine.reading.input_kinds",
    "lakehouse_assets.lib.engine.writing.sink_kinds",
}


def kind_classes() -> set[str]:
    """Every sink and input class, by its full name."""
    found = set()
    for module in (sinks, inputs, kafka_inputs, landing_inputs):
        for name, value in vars(module).items():
            ours = inspect.isclass(value) and value.__module__ == module.__name__
            if ours and (issubclass(value, sinks.TableSink) or hasattr(value, "kind")):
                found.add(f"{module.__name__}.{name}")
    return found


def type_tests(path: Path, watched: set[str]) -> list[str]:
    """``isinstance``/``issubclass``/``type(...)`` comparisons in ``path`` naming a watched class."""
    tree = ast.parse(path.read_text())
    local = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                local[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.ClassDef):
            local.setdefault(node.name, f"<here>.{node.name}")
    named = {name for name, full in local.items() if full in watched}
    here = {n.split(".")[-1] for n in watched}
    own = path.stem in {"sinks", "inputs", "kafka_inputs", "landing_inputs"}
    names = named | (here if own else set())
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        if node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            mentioned = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            if mentioned & names:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(node)}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.Eq, ast.In)) for op in node.ops):
            parts = [node.left, *node.comparators]
            calls_type = any(isinstance(p, ast.Call) and getattr(p.func, "id", "") == "type" for p in parts)
            mentioned = {n.id for p in parts for n in ast.walk(p) if isinstance(n, ast.Name)}
            if calls_type and mentioned & names:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_watch_list_knows_every_kind() -> None:
    watched = kind_classes()
    expected = {"AppendSink", "MergeSink", "RecomputeSink", "OverwriteSink", "SnapshotCdcSink", "KafkaSink"}
    expected |= {"DeltaPathSink", "TableInput", "LandingInput", "CatalogInput", "KafkaInput", "TableSink"}
    assert expected <= {n.split(".")[-1] for n in watched}


def test_no_type_test_on_a_sink_or_input_outside_the_registries() -> None:
    watched = kind_classes()
    found = [
        line
        for name, path in sorted(modules().items())
        if name.startswith("lakehouse_assets.lib.") and name not in REGISTRIES
        for line in type_tests(path, watched)
    ]
    assert not found, "sinks or inputs told apart by type outside their registries:\n" + "\n".join(found)


def test_the_check_finds_a_type_test(tmp_path: Path) -> None:
    probe = PACKAGE / "lib" / "engine" / "_probe_kind_test.py"
    probe.write_text(
        "from lakehouse_assets.lib.declare.sinks import KafkaSink\n"
        "def f(sink):\n    return isinstance(sink, (KafkaSink, int)) or type(sink) is KafkaSink\n"
    )
    try:
        assert len(type_tests(probe, kind_classes())) == 2
    finally:
        probe.unlink()


def test_every_kind_has_an_engine_strategy() -> None:
    from lakehouse_assets.lib.engine.reading.input_kinds import INPUT_READERS
    from lakehouse_assets.lib.engine.writing.sink_kinds import SINK_KINDS

    sink_kinds = {c.kind for c in _subclasses(sinks.TableSink) if c.kind}
    input_kinds = {
        inputs.TableInput.kind,
        inputs.LandingInput.kind,
        inputs.CatalogInput.kind,
        kafka_inputs.KafkaInput.kind,
    }
    assert sink_kinds == set(SINK_KINDS)
    assert input_kinds == set(INPUT_READERS)
    for kind, strategy in SINK_KINDS.items():
        # Each streaming kind builds a query, writes through Delta's own sink, or is written whole.
        assert strategy.prepare or strategy.write_whole or strategy.direct == "always", kind


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found
