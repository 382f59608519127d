"""Collecting the tables a package declares, as Dagster's ``load_defs`` collects definitions:
every module under the package is imported and every :class:`TableSpec` it defines at
module level is taken, once, in module order."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from lakehouse_assets.lib.declare.inputs import LandingInput, of_kind
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.errors import DeclarationError


def _modules(package: ModuleType) -> list[ModuleType]:
    found = [package]
    for info in sorted(pkgutil.walk_packages(package.__path__, package.__name__ + "."), key=lambda i: i.name):
        found.append(importlib.import_module(info.name))
    return found


def collect_tables(package: ModuleType | str) -> list[TableSpec]:
    """The streaming tables declared in ``package`` and its sub-modules.

    :param package: a package or its dotted name (for example ``"my_project.defs"``).
    :raises ValueError: two different tables declare the same name.
    """
    root = importlib.import_module(package) if isinstance(package, str) else package
    tables: dict[str, TableSpec] = {}
    for module in _modules(root):
        for value in vars(module).values():
            if not isinstance(value, TableSpec):
                continue
            seen = tables.get(value.name)
            if seen is not None and seen is not value:
                raise DeclarationError(
                    f"two tables are named {value.name!r} in {root.__name__} (one in {module.__name__})"
                )
            tables.setdefault(value.name, value)
    refuse_cycles(list(tables.values()))
    refuse_shared_cleaning(list(tables.values()))
    return list(tables.values())


def refuse_cycles(tables: list[TableSpec]) -> None:
    """One sentence naming the cycle when tables read each other round in a circle."""
    reads = {t.name: set(t.upstream_tables) for t in tables}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            cycle = (*path[path.index(name) :], name)
            raise DeclarationError(f"tables read each other in a cycle: {' -> '.join(cycle)}")
        for upstream in reads.get(name, ()):
            visit(upstream, (*path, name))

    for name in reads:
        visit(name, ())


def refuse_shared_cleaning(tables: list[TableSpec]) -> None:
    """One sentence when a landing folder whose files are archived or deleted once committed is
    read by more than one table or flow: one reader's commit says nothing of the other's."""
    readers: dict[str, list[str]] = {}
    cleaned: set[str] = set()
    for table in tables:
        for flow in table.flow_runs():
            for source in of_kind(flow.inputs.values(), LandingInput):
                readers.setdefault(source.described, []).append(flow.checkpoint_name)
                if source.clean_source != "off":
                    cleaned.add(source.described)
    for folder in sorted(cleaned):
        if len(readers[folder]) > 1:
            raise DeclarationError(
                f"{folder} is read by {', '.join(readers[folder])} and its files are cleaned once committed "
                "(clean_source): a file one reader committed may not be read by the other yet; let one table "
                "read the folder, or keep its files (clean_source='off')"
            )
