"""One micro-batch of an append or merge table: expectations split its rows, the kept rows are
written with the table's sink and the quarantined ones appended to its quarantine table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, StringType, StructType

from lakehouse_assets.lib.declare.expectations import (
    FAILED_EXPECTATIONS,
    split_by_expectations,
    with_expectation_flags,
)
from lakehouse_assets.lib.declare.sinks import TableSink
from lakehouse_assets.lib.declare.sql_names import column
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.locking.table_lease import current_fence
from lakehouse_assets.lib.engine.report import ExpectationSplit, RunReport, sample_written
from lakehouse_assets.lib.engine.state.ledger import BatchLedger
from lakehouse_assets.lib.engine.writing.counting import expectation_counts, first_failure
from lakehouse_assets.lib.engine.writing.query import BatchHandler
from lakehouse_assets.lib.engine.writing.writes import BatchWrite, append_batch
from lakehouse_assets.lib.errors import ExpectationFailed
from lakehouse_assets.lib.paths import LakehousePaths

# Writes a micro-batch's kept rows with the table's sink (the write, the rows when known); rows written.
RowsWrite = Callable[[TableSink, DataFrame, BatchWrite, "int | None"], int]


@dataclass(frozen=True)
class PreparedQuery:
    """What a write strategy hands the query: the stream to run, the schemas of the tables to
    create before it starts, and the micro-batch handler."""

    stream: DataFrame
    output_schema: StructType
    quarantine_schema: StructType | None
    handler: BatchHandler


def quarantine_columns(table: TableSpec, df: DataFrame) -> list[str]:
    q = table.quarantine
    assert q is not None
    return q.columns or table.columns or [c for c in df.columns if not c.startswith("__lh_")]


def quarantine_schema(table: TableSpec, df: DataFrame) -> StructType | None:
    """The quarantine table's schema for rows like ``df`` (None: the table has no quarantine)."""
    if table.quarantine is None:
        return None
    schema = df.select(*quarantine_columns(table, df)).schema
    return schema.add(FAILED_EXPECTATIONS, ArrayType(StringType())) if table.quarantine.with_failures else schema


def evaluate_expectations(table: TableSpec, flagged: DataFrame, report: RunReport) -> ExpectationSplit:
    """Count each expectation's failures into the report, fail the query on a violated
    ``fail`` expectation, and split the rows (one pass over ``flagged``: the counts)."""
    expectations = table.expectations
    counts, report.landed_files = expectation_counts(flagged, expectations)
    rows, n_quarantined, n_dropped = counts.pop("__rows"), counts.pop("__quarantined"), counts.pop("__dropped")
    for e in expectations:
        if e.action == "fail" and counts[e.name]:
            raise ExpectationFailed(
                f"{table.name}: expectation {e.name} ({e.condition}) failed on "
                f"{counts[e.name]} rows, e.g. {first_failure(flagged, e)}"
            )
    kept, quarantined, _ = split_by_expectations(flagged, expectations)
    report.dropped_by_expectations += n_dropped
    report.expectation_rows += rows
    for name, failed in counts.items():
        report.expectation_failures[name] = report.expectation_failures.get(name, 0) + failed
    return ExpectationSplit(kept, quarantined, rows, n_quarantined, rows - n_quarantined - n_dropped)


def write_quarantine(
    paths: LakehousePaths,
    table: TableSpec,
    split: ExpectationSplit,
    source: DataFrame,
    app_id: str,
    batch_id: int,
    report: RunReport,
) -> int:
    """Append the quarantined rows, idempotently; returns how many there were."""
    q = table.quarantine
    if q is None:
        return 0
    q_rows = split.quarantined.select(
        *quarantine_columns(table, source), *([FAILED_EXPECTATIONS] if q.with_failures else [])
    )
    if split.quarantined_rows:
        write = BatchWrite(source.sparkSession, paths.table(q.table), f"{app_id}:quarantine", batch_id)
        append_batch(q_rows, write)
        report.written[q.table] = sample_written(q_rows)
    return split.quarantined_rows


def publisher(table: TableSpec, rows: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """Turns the function's kept rows into the table's rows: ``publish``, else select ``columns``
    (default: every column of ``rows`` but the framework's own)."""
    columns = table.columns or [c for c in rows.columns if not c.startswith("__lh_")]
    return table.publish or (lambda df: df.select(*map(column, columns)))


def prepare_batches(
    spark: SparkSession,
    paths: LakehousePaths,
    table: TableSpec,
    inputs: dict[str, DataFrame],
    ledger: BatchLedger,
    app_id: str,
    *,
    write_rows: RowsWrite,
) -> PreparedQuery:
    """The per-batch strategy (append, merge and Kafka sinks): the function runs on the stream,
    each micro-batch's rows are split by the expectations and written as they come by
    ``write_rows`` (the sink kind's); each batch's figures go to ``ledger``."""
    stream = table.transform(**inputs)
    publish = publisher(table, stream)
    fence = current_fence(table.name)  # the run's table lease, checked before each batch writes

    def handle(batch: DataFrame, batch_id: int) -> None:
        report = RunReport(table.name)
        flagged = with_expectation_flags(batch, table.expectations).persist()
        try:
            split = evaluate_expectations(table, flagged, report)
            if split.rows == 0:
                return
            if fence is not None:
                fence.check()
            published = publish(split.kept)
            # The default publish only selects columns, so the kept rows are the rows to write.
            known = split.kept_rows if table.publish is None else None
            write = BatchWrite(batch.sparkSession, paths.table(table.name), app_id, batch_id)
            written = write_rows(table.sink, published, write, known)
            faults.reached(table.name, "after_table_write")
            if written:
                report.written[table.name] = sample_written(published)
            n_quarantined = write_quarantine(paths, table, split, batch, app_id, batch_id, report)
            faults.reached(table.name, "after_batch_writes")
            report.result_rows += split.rows
            report.rows_written += written
            report.rows_quarantined += n_quarantined
            # A merge writes fewer rows than it is handed when keys are already present.
            report.dropped_duplicates += split.kept_rows - written
            ledger.record(batch_id, report)
        finally:
            flagged.unpersist()

    return PreparedQuery(stream, publish(stream).schema, quarantine_schema(table, stream), handle)
