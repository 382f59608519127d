"""The ``availableNow`` query: started from the table's checkpoint, awaited, its progress logged
and counted into the run report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame

from lakehouse_assets.lib import timings
from lakehouse_assets.lib.declare.parsing import UNEXAMINED
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.errors import short_error, unreadable_file
from lakehouse_assets.lib.engine.report import RunReport
from lakehouse_assets.lib.errors import LakehouseError, LandedFileUnreadable, UnexaminedFile

BatchHandler = Callable[[DataFrame, int], None]


def run_query(
    stream: DataFrame,
    table: TableSpec,
    handler: BatchHandler,
    checkpoint: str,
    report: RunReport,
    log: Callable[[str], None],
) -> None:
    """Drain everything new through ``handler`` (``foreachBatch``) and wait for the end."""
    query = (
        stream.writeStream.queryName(table.name if table.flow is None else f"{table.name}:{table.flow}")
        .foreachBatch(handler)
        .outputMode(table.output_mode)
        .trigger(availableNow=True)
        .option("checkpointLocation", checkpoint)
        .start()
    )
    await_query(query, table, report, log)


def await_query(query: Any, table: TableSpec, report: RunReport, log: Callable[[str], None]) -> None:
    seen = -1

    def log_progress() -> None:
        nonlocal seen
        for progress in query.recentProgress:
            batch_id = progress.batchId
            if batch_id <= seen:
                continue
            seen = batch_id
            rows = progress.numInputRows
            if rows == 0 and batch_id > 0 and not progress.stateOperators:
                continue
            duration = int(progress.durationMs.get("triggerExecution", 0))
            report.batch_durations_ms.append(duration)
            # What the query read is counted here, where the log line says it, so the two agree.
            report.rows_read += rows
            report.batches += 1 if rows else 0
            for op in progress.stateOperators or []:
                report.dropped_late += int(op.numRowsDroppedByWatermark or 0)
            if progress.stateOperators:
                report.state_rows = sum(int(op.numRowsTotal or 0) for op in progress.stateOperators)
            watermark = (progress.eventTime or {}).get("watermark")
            if watermark and not watermark.startswith("1970-01-01T00:00:00"):  # (epoch: none yet)
                report.watermark = watermark
            log(
                f"{table.name}: batch {batch_id}: {rows} rows in {duration} ms "
                f"({progress.processedRowsPerSecond or 0:.0f} rows/s)"
            )

    with timings.span("query", table.name) as details:
        try:
            while not query.awaitTermination(1):
                log_progress()
        except StreamingQueryException as error:
            message = f"{table.name}: {short_error(error)}"
            failed = unreadable_file(error)
            if failed:
                raise LandedFileUnreadable(message, failed) from None
            raise (UnexaminedFile if UNEXAMINED in message else LakehouseError)(message) from None
        finally:
            log_progress()
            if timings.listening():
                details["progress"] = [
                    {"batchId": p.batchId, "numInputRows": p.numInputRows, "durationMs": dict(p.durationMs)}
                    for p in query.recentProgress
                ]
