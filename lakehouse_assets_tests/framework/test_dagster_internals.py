"""The Dagster internals the framework uses are all in ``orchestrate/dagster_internals.py``, and
each still has the shape the framework relies on: a Dagster upgrade that moves, renames or
reshapes one fails here, naming it, before a run launcher or a pool claim fails at run time."""

from __future__ import annotations

import ast
import inspect

import pytest
from dagster_postgres import PostgresEventLogStorage

from lakehouse_assets.lib.orchestrate import dagster_internals as internals
from lakehouse_assets_tests.framework.test_architecture import PACKAGE

pytestmark = pytest.mark.unit

HOME = PACKAGE / "lib" / "orchestrate" / "dagster_internals.py"


def private_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("dagster._") or (
                node.module == "dagster" and any(a.name.startswith("_") for a in node.names)
            ):
                found.append(f"{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.startswith("dagster._")]
    return found


def test_nothing_else_imports_a_dagster_internal() -> None:
    found = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in PACKAGE.rglob("*.py")
        if path != HOME and (lines := private_imports(path.read_text()))
    }
    assert not found, f"Dagster internals imported outside {HOME.name}: {found}"
    assert private_imports(HOME.read_text())  # the reading sees imports


def test_each_internal_still_has_the_shape_used() -> None:
    claim = getattr(PostgresEventLogStorage, internals.CLAIM_SLOT_METHOD)
    assert list(inspect.signature(claim).parameters) == ["self", "concurrency_key", "run_id", "step_key"]
    assert set(internals.RunLauncher.__abstractmethods__) == {"launch_run", "terminate"}
    assert set(internals.ConfigurableClass.__abstractmethods__) == {"config_type", "from_config_value", "inst_data"}
    assert list(inspect.signature(internals.get_run_crash_explanation).parameters) == ["prefix", "exit_code"]
    assert {"id", "concurrency_key", "run_id", "step_key", "deleted"} <= {
        c.name for c in internals.ConcurrencySlotsTable.c
    }
    assert {m.name for m in internals.ConcurrencySlotStatus} >= {"BLOCKED", "CLAIMED"}
    assert {"job_origin", "run_id", "instance_ref"} <= set(internals.ExecuteRunArgs._fields)
    assert "module" in internals.ModuleCodePointer._fields and "module" in internals.PackageCodePointer._fields
    assert {"dagster_run", "workspace"} <= set(inspect.signature(internals.LaunchRunContext).parameters)
    assert callable(internals.db_select)


def test_the_types_named_for_annotations_still_exist() -> None:
    import dagster as dg
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
    from dagster._utils.error import SerializableErrorInfo

    assert isinstance(dg.define_asset_job("probe"), UnresolvedAssetJobDefinition)
    assert "cause" in SerializableErrorInfo._fields


def test_the_run_worker_modules_import() -> None:
    import importlib

    for name in internals.RUN_WORKER_MODULES:
        importlib.import_module(name)
    from dagster._cli import main

    assert callable(main)
