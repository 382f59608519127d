"""The event log's rows: what one run did to one table, one check's evaluation, or what a killed
run had committed before it died, as plain values (no Spark, no storage).

Every event has an ``event_id`` that names what it is about (the run, the table, the check), so
recording it twice (a retried step, a sync that died before it forgot its files) keeps one row.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from lakehouse_assets.lib.engine.report import RunReport

EVENT_TYPES = ("run", "check", "killed_run")

EVENT_SCHEMA = StructType(
    [
        StructField("event_id", StringType(), metadata={"comment": "What the event is about; one row each"}),
        StructField("timestamp", TimestampType(), metadata={"comment": "When the event was recorded (UTC)"}),
        StructField(
            "event_type",
            StringType(),
            metadata={
                "comment": "run: a table's run; check: a check evaluation; killed_run: what a killed run committed"
            },
        ),
        StructField("run_id", StringType(), metadata={"comment": "The Dagster run (empty outside Dagster)"}),
        StructField("table_name", StringType(), metadata={"comment": "The table the event is about"}),
        StructField("status", StringType(), metadata={"comment": "succeeded, failed, passed or killed"}),
        StructField("message", StringType(), metadata={"comment": "The event in one line, as the run log says it"}),
        StructField("batches", LongType(), metadata={"comment": "Micro-batches committed"}),
        StructField("rows_read", LongType(), metadata={"comment": "Rows the query read (null: not known)"}),
        StructField("rows_written", LongType(), metadata={"comment": "Rows written to the table"}),
        StructField("rows_quarantined", LongType(), metadata={"comment": "Rows appended to its quarantine table"}),
        StructField("rows_dropped", LongType(), metadata={"comment": "Rows dropped, every kind"}),
        StructField(
            "expectation_failures",
            MapType(StringType(), LongType()),
            metadata={"comment": "Per expectation: rows that failed it (dropped, quarantined or kept per its action)"},
        ),
        StructField("dropped_duplicates", LongType(), metadata={"comment": "Rows a merge found present already"}),
        StructField("dropped_late", LongType(), metadata={"comment": "Rows behind the watermark"}),
        StructField("files_set_aside", LongType(), metadata={"comment": "Landed files the run set aside"}),
        StructField("duration_s", DoubleType(), metadata={"comment": "How long the run or check took"}),
        StructField("delta_version", LongType(), metadata={"comment": "The table's Delta version after the run"}),
        StructField("check_name", StringType(), metadata={"comment": "The check (check events)"}),
        StructField("passed", BooleanType(), metadata={"comment": "Whether the check passed (check events)"}),
        StructField("details", StringType(), metadata={"comment": "Everything else, as JSON"}),
    ]
)
COLUMNS = [f.name for f in EVENT_SCHEMA.fields]


def _event(event_id: str, event_type: str, run_id: str, table: str, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(event_id=event_id, timestamp=datetime.now(UTC), event_type=event_type, run_id=run_id, table_name=table)
    row.update(values)
    return row


def _figures(report: RunReport) -> dict[str, Any]:
    return {
        "batches": report.batches,
        "rows_written": report.rows_written,
        "rows_quarantined": report.rows_quarantined,
        "rows_dropped": report.rows_dropped,
        "expectation_failures": dict(report.expectation_failures),
        "dropped_duplicates": report.dropped_duplicates,
        "dropped_late": report.dropped_late,
        "files_set_aside": len(report.files_set_aside),
    }


def run_event(run_id: str, report: RunReport, delta_version: int | None) -> dict[str, Any]:
    """What one run did to ``report.table``: the figures of its summary line.

    :param run_id: the run (its table's event is recorded once, however often the step ran).
    :param report: the run's report.
    :param delta_version: the table's version after the run (None: not a Delta table).
    """
    details = {
        "dropped_by_expectations": report.dropped_by_expectations,
        "rows_reduced": report.rows_reduced,
        "state_rows": report.state_rows,
        "watermark": report.watermark,
        "batch_durations_ms": report.batch_durations_ms,
        "schema_changes": report.schema_changes,
        "warnings": report.warnings,
        "full_refresh": report.full_refresh,
        "refresh": report.refresh,
    }
    return _event(
        f"{run_id}:{report.table}:run",
        "run",
        run_id,
        report.table,
        status="succeeded",
        message=report.summary(),
        rows_read=report.rows_read,
        duration_s=report.duration_s,
        delta_version=delta_version,
        details=json.dumps(details, default=str),
        **_figures(report),
    )


def failed_run_event(run_id: str, table: str, error: str) -> dict[str, Any]:
    """A run of ``table`` that failed with ``error`` (what it committed first is not counted)."""
    return _event(f"{run_id}:{table}:failed", "run", run_id, table, status="failed", message=error)


def check_event(run_id: str, table: str, check: str, passed: bool, metadata: dict[str, Any]) -> dict[str, Any]:
    """One evaluation of ``check`` on ``table`` in run ``run_id``.

    :param metadata: the check's metadata (plain values or Dagster metadata values).
    """
    plain = {k: getattr(v, "value", v) for k, v in metadata.items()}
    duration = plain.get("duration_s")
    return _event(
        f"{run_id}:{table}:check:{check}",
        "check",
        run_id,
        table,
        status="passed" if passed else "failed",
        message=f"{check} {'passed' if passed else 'failed'}" + (f": {plain['error']}" if "error" in plain else ""),
        check_name=check,
        passed=passed,
        duration_s=float(duration) if isinstance(duration, int | float) else None,
        details=json.dumps(plain, default=str),
    )


def table_run_events(
    run_id: str,
    table: str,
    report: RunReport | None,
    delta_version: int | None,
    checks: list[tuple[str, bool, dict[str, Any]]],
    error: str | None,
) -> list[dict[str, Any]]:
    """The events of one step of a table: its run (or its failure) and each check evaluated.

    :param checks: (check, passed, metadata) of each check evaluated.
    :param error: the failure's message (None: the run succeeded).
    """
    events = [run_event(run_id, report, delta_version)] if report is not None else []
    if error is not None:
        events.append(failed_run_event(run_id, table, error))
    return events + [check_event(run_id, table, name, passed, metadata) for name, passed, metadata in checks]


def killed_run_event(run_id: str, flow: str, table: str, committed: RunReport) -> dict[str, Any]:
    """What a run that was killed had committed to ``table`` (through ``flow``'s checkpoint)
    before it died: micro-batches a later run will not replay. Rows read are not known.

    :param run_id: the killed run.
    :param flow: the checkpoint the batches were committed in.
    """
    return _event(
        f"{run_id}:{flow}:killed_run",
        "killed_run",
        run_id,
        table,
        status="killed",
        message=(
            f"{table}: a killed run had committed {committed.batches} micro-batch(es) with "
            f"{committed.rows_written} rows written before it died"
        ),
        details=json.dumps({"flow": flow}),
        **_figures(committed),
    )


def to_json(event: dict[str, Any]) -> str:
    return json.dumps({**event, "timestamp": event["timestamp"].isoformat()})


def from_json(text: str) -> dict[str, Any]:
    event = json.loads(text)
    event["timestamp"] = datetime.fromisoformat(event["timestamp"])
    return {name: event.get(name) for name in COLUMNS}
