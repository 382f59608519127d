"""The event log: every run's per-table figures and every check evaluation, in a Delta table
under the data root (``tables/_lakehouse_events``, named ``_lakehouse_events`` in the catalog).

A run records its events as small files (``_lakehouse/pending-events/``, one per event, named
by its id), which costs a run milliseconds and no Delta commit on its critical path.
:func:`sync` moves them into the table: a ``MERGE`` that inserts only events it does not hold,
then deletes the files it took. A sync killed between the two takes the same files again and
inserts nothing twice; an event recorded twice (a step tried again) is one file, one row.
``python -m lakehouse_assets.sql`` and the maintenance job sync before they read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from pyspark.sql import SparkSession

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.locking.writer_lock import writer_lock
from lakehouse_assets.lib.engine.state import delta_sql, storage
from lakehouse_assets.lib.engine.state.checkpoint import query_checkpoint
from lakehouse_assets.lib.engine.state.ledger import BatchLedger
from lakehouse_assets.lib.engine.state.run_events import EVENT_SCHEMA, from_json, killed_run_event, to_json
from lakehouse_assets.lib.paths import LakehousePaths

EVENT_LOG_TABLE = "_lakehouse_events"
# How many pending files one MERGE takes at most (a sync loops until none are left).
SYNC_CHUNK = 5000


def pending_folder(paths: LakehousePaths) -> str:
    return f"{paths.root}/_lakehouse/pending-events"


def event_log_path(paths: LakehousePaths) -> str:
    return paths.table(EVENT_LOG_TABLE)


def _file_name(event_id: str) -> str:
    # Ids hold run ids and table names: a digest keeps the name short and safe on any store.
    return hashlib.sha256(event_id.encode()).hexdigest()[:40] + ".json"


def record(paths: LakehousePaths, events: Iterable[dict[str, Any]]) -> None:
    """Keep ``events`` until the next :func:`sync` (an event recorded again replaces itself)."""
    folder = pending_folder(paths)
    for event in events:
        storage.write_text(f"{folder}/{_file_name(event['event_id'])}", to_json(event))


def pending(paths: LakehousePaths) -> list[str]:
    """The names of the events not yet in the table."""
    return sorted(n for n in storage.list_names(pending_folder(paths)) if n.endswith(".json") and n[0] != ".")


def sync(spark: SparkSession, paths: LakehousePaths, log: Callable[[str], None] | None = None) -> int:
    """Move every pending event into the event log table; how many rows it added.

    One sync at a time (the table's writer lock), so two never insert the same event."""
    say = log or (lambda message: None)
    path = event_log_path(paths)
    added = 0
    with writer_lock(paths).hold(EVENT_LOG_TABLE, writer="the event log's sync"):
        names = pending(paths)
        if names and not delta_sql.is_delta_table(path):
            delta_sql.create_table(spark, path, EVENT_SCHEMA, partition_by=(), properties={})
        for start in range(0, len(names), SYNC_CHUNK):
            chunk = names[start : start + SYNC_CHUNK]
            events = []
            for name in chunk:
                text = storage.read_text(f"{pending_folder(paths)}/{name}")
                if text:
                    events.append(from_json(text))
            if events:
                source = spark.createDataFrame(events, EVENT_SCHEMA)
                metrics = delta_sql.merge(source, path, "t.event_id = s.event_id", ["WHEN NOT MATCHED THEN INSERT *"])
                added += metrics.get("num_inserted_rows", 0)
            for name in chunk:
                storage.delete(f"{pending_folder(paths)}/{name}")
        if names:
            say(f"event log: {added} event(s) added from {len(names)} pending file(s)")
    return added


def record_killed_runs(paths: LakehousePaths, flow: TableSpec) -> int:
    """Record what runs that were killed had committed through ``flow``'s checkpoint (their
    micro-batches with a commit), then forget their records; how many such runs. Call while
    holding the table's writer lock, before the flow's query starts."""
    folder = paths.checkpoint(flow.checkpoint_name)
    if not storage.exists(f"{folder}/run-reports"):
        return 0
    commits = [int(n) for n in storage.list_names(f"{query_checkpoint(paths, flow)}/commits") if n.isdigit()]
    killed = BatchLedger.killed_runs(folder, max(commits) if commits else None)
    record(
        paths,
        [
            killed_run_event(run_id, flow.checkpoint_name, flow.name, report)
            for run_id, report in killed
            if report.batches
        ],
    )
    BatchLedger.forget_killed(folder)
    return len(killed)
