"""Lookup (static) inputs whose feed last failed: the table still runs, joining the lookup's last
good version, and the run says so.

The events chain only enriches from ``silver_customers``; a broken customers file should not hold
it back (each landing source runs on its own, :func:`~lakehouse_assets.lib.orchestrate.jobs.fed_by`),
but nobody should have to guess that the tiers it joined are older than the files that landed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import dagster as dg

from lakehouse_assets.lib.declare.table import TableSpec

if TYPE_CHECKING:  # Dagster does not export its error record type by name
    from lakehouse_assets.lib.orchestrate.dagster_internals import SerializableErrorInfo

# Failed runs looked at, newest first, for one in which the lookup's feed failed.
RUNS_LOOKED_AT = 20


def lookup_feeds(table: TableSpec, tables: Sequence[TableSpec]) -> dict[str, list[str]]:
    """Each lookup input of ``table`` with the tables that feed it (itself first, then upstream)."""
    owner = {key: t for t in tables for key in t.outputs}
    feeds: dict[str, list[str]] = {}
    for lookup in table.lookup_tables:
        chain, todo = [], [lookup]
        while todo:
            name = todo.pop(0)
            if name in chain or name not in owner:
                continue
            chain.append(name)
            todo.extend(owner[name].upstream_tables)
        feeds[lookup] = chain
    return feeds


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _error_line(error: SerializableErrorInfo | None) -> str:
    """The first line of what went wrong, under Dagster's wrapper when there is one."""
    while error is not None and error.cls_name == "DagsterExecutionStepExecutionError" and error.cause:
        error = error.cause
    lines = error.message.strip().splitlines() if error else []
    if not lines:
        return "see that run's log"
    kind, _, text = lines[0].partition(": ")
    assert error is not None  # lines came from it
    return (text if error.cls_name and kind.endswith(error.cls_name) else lines[0])[:600]


def _failed_step(instance: dg.DagsterInstance, run_id: str, steps: list[str]) -> tuple[str, float, str] | None:
    """The first of ``steps`` that failed in run ``run_id``: its name, when, and why."""
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        event = record.dagster_event
        if event and event.step_key in steps:
            return event.step_key, record.timestamp, _error_line(event.step_failure_data.error)
    return None


def _failure_since(instance: dg.DagsterInstance, chain: list[str], after: float | None):
    """The newest finished run, updated after ``after`` (a timestamp), in which a table of
    ``chain`` failed after that time; runs still queued or going may yet succeed and are not read."""
    filters = dg.RunsFilter(
        statuses=[dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED],
        updated_after=datetime.fromtimestamp(after, UTC) if after is not None else None,
    )
    for record in instance.get_run_records(filters=filters, limit=RUNS_LOOKED_AT):  # newest first
        failed = _failed_step(instance, record.dagster_run.run_id, chain)
        if failed is not None and (after is None or failed[1] > after):
            return record.dagster_run.run_id, failed
    return None


def stale_lookups(instance: dg.DagsterInstance, feeds: dict[str, list[str]]) -> dict[str, str]:
    """For each lookup that a finished run meant to materialize after its last materialization
    but did not, because a table feeding it failed: which version is read and what failed.

    Dagster's open-source storage keeps no failed-materialization records, so the failed runs
    since are read instead."""
    stale: dict[str, str] = {}
    for lookup, chain in feeds.items():
        good = instance.fetch_materializations(dg.AssetKey(lookup), limit=1).records
        found = _failure_since(instance, chain, good[0].timestamp if good else None)
        if found is None:
            continue
        run_id, (step, failed_at, reason) = found
        if good:
            materialization = good[0].asset_materialization
            version = materialization.metadata.get("delta_version") if materialization else None
            read = (
                f"read at its last good version ({'version ' + str(version.value) + ', ' if version else ''}"
                f"materialized {_when(good[0].timestamp)})"
            )
        else:
            read = "not materialized yet"
        stale[lookup] = (
            f"lookup {lookup} is {read}: {step} failed to materialize in run "
            f"{run_id[:8]} at {_when(failed_at)}: {reason}"
        )
    return stale
