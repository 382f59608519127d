"""Every Dagster internal (a ``dagster._…`` name) the framework uses, in one place: why, and the
supported API that would replace it. Nothing else imports ``dagster._``
(``lakehouse_assets_tests/framework/test_dagster_internals.py`` reads the source, and checks the
shape of each name here against the pinned Dagster, so an upgrade that moves or changes one fails
that test first).

Types only, for annotations (Dagster returns them but does not export their names):

- ``UnresolvedAssetJobDefinition``: what ``dg.define_asset_job`` returns; sensors and schedules
  take it. Ask: export it (``dg.UnresolvedAssetJobDefinition``).
- ``SerializableErrorInfo``: a failed run's error record (``DagsterEvent.event_specific_data``).
  Ask: export it.

Speed machinery (:mod:`lakehouse_assets.lib.accel`, each piece switched on in ``dagster.yaml``):

- ``RunLauncher``, ``LaunchRunContext``, ``ConfigurableClass``, ``ConfigurableClassData``,
  ``ModuleCodePointer``, ``PackageCodePointer``, ``ExecuteRunArgs``: the warm run launcher is a
  pluggable run launcher, the documented extension point, whose base classes Dagster keeps private.
  Ask: a public ``RunLauncher`` base (dagster-io/dagster has run launchers in its libraries only).
- ``get_run_crash_explanation``, ``capture_interrupts`` and ``dagster._cli.main``: the forked run
  worker does what ``dagster api execute_run`` does, in a process forked from a warm one. Ask: a
  callable ``execute_run(args)`` entry point.
- ``ConcurrencySlotsTable``, ``db_select``, ``ConcurrencySlotStatus`` and the override of
  ``PostgresEventLogStorage._claim_concurrency_slot``: a pool slot claimed only while it is still
  free (Dagster's claim can double-book under a race). Ask: an atomic claim in the storage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dagster._core.code_pointer import ModuleCodePointer, PackageCodePointer
from dagster._core.launcher.base import LaunchRunContext, RunLauncher
from dagster._core.storage.event_log.schema import ConcurrencySlotsTable
from dagster._core.storage.sqlalchemy_compat import db_select
from dagster._grpc.types import ExecuteRunArgs
from dagster._serdes import ConfigurableClass, ConfigurableClassData
from dagster._utils import get_run_crash_explanation
from dagster._utils.concurrency import ConcurrencySlotStatus
from dagster._utils.interrupts import capture_interrupts

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
    from dagster._utils.error import SerializableErrorInfo

# The private method of dagster-postgres's event log storage that accel/pool_slots.py overrides.
CLAIM_SLOT_METHOD = "_claim_concurrency_slot"
# Modules a warm run process imports before it forks (what `dagster api execute_run` loads).
RUN_WORKER_MODULES = ("dagster", "dagster._cli", "dagster._cli.api", "dagster._core.execution.api")


def run_dagster_cli() -> None:
    """Dagster's command line, as ``dagster`` runs it (``dagster api execute_run`` in a forked worker)."""
    from dagster._cli import main

    with capture_interrupts():
        main()


__all__ = [
    "CLAIM_SLOT_METHOD",
    "RUN_WORKER_MODULES",
    "ConcurrencySlotStatus",
    "ConcurrencySlotsTable",
    "ConfigurableClass",
    "ConfigurableClassData",
    "ExecuteRunArgs",
    "LaunchRunContext",
    "ModuleCodePointer",
    "PackageCodePointer",
    "RunLauncher",
    "SerializableErrorInfo",
    "UnresolvedAssetJobDefinition",
    "db_select",
    "get_run_crash_explanation",
    "run_dagster_cli",
]
