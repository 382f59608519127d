"""Lookup (static) inputs whose feed last failed: the table still runs, joining the lookup's last
good version, and the run says so.

The events chain only enriches from ``silver_customers``; a broken customers file should not hold
it back (each landing source runs on its own, :func:`~lakehouse_assets.lib.orchestrate.jobs.fed_by`),
but nobody should have to guess that the tiers it joined are older than the files that landed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import dagster as dg

from lakehouse_assets.lib.declare.table import StreamingTable


def lookup_feeds(table: StreamingTable, tables: Sequence[StreamingTable]) -> dict[str, list[str]]:
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


def _failed_step(instance: dg.DagsterInstance, run_id: str, steps: list[str]) -> tuple[str, str] | None:
    """The first of ``steps`` that failed in run ``run_id``, with the first line of its error."""
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        event = record.dagster_event
        if event and event.step_key in steps:
            error = event.step_failure_data.error
            if error is None:
                return event.step_key, "see that run's log"
            line = error.message.strip().splitlines()[0]
            kind, _, text = line.partition(": ")
            return event.step_key, (text if error.cls_name and kind.endswith(error.cls_name) else line)[:600]
    return None


def stale_lookups(instance: dg.DagsterInstance, feeds: dict[str, list[str]]) -> dict[str, str]:
    """For each lookup that a finished run meant to materialize after its last materialization
    but did not, because a table feeding it failed: which version is read and what failed.

    Dagster's open-source storage keeps no failed-materialization records, so the run that
    planned the lookup is read instead."""
    stale: dict[str, str] = {}
    for lookup, chain in feeds.items():
        key = dg.AssetKey(lookup)
        good = instance.fetch_materializations(key, limit=1).records
        planned = instance.fetch_planned_materializations(key, limit=1).records
        if not planned or (good and good[0].storage_id > planned[0].storage_id):
            continue
        run = instance.get_run_by_id(planned[0].run_id)
        if run is None or run.status not in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):
            continue
        failed = _failed_step(instance, run.run_id, chain)
        if failed is None:
            continue
        if good:
            materialization = good[0].asset_materialization
            version = materialization.metadata.get("delta_version") if materialization else None
            read = (f"read at its last good version ({'version ' + str(version.value) + ', ' if version else ''}"
                    f"materialized {_when(good[0].timestamp)})")  # fmt: skip
        else:
            read = "empty (never materialized)"
        step, reason = failed
        stale[lookup] = (
            f"lookup {lookup} is {read}: {step} failed to materialize in run "
            f"{run.run_id[:8]} at {_when(planned[0].timestamp)}: {reason}"
        )
    return stale
