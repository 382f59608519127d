"""The recompute write strategy: exact incremental results for aggregations.

Contract: the table reads exactly one Delta table as a stream or change feed (checked when the
table is declared); its other inputs are static lookups. Each micro-batch's new input rows name
the keys they touch; for those keys the function's rows are recomputed from the *whole current
input table* (bounded by ``reread_by``) and replace the stored rows in one idempotent MERGE.
Expectations are evaluated on the function's rows for the micro-batch's new input rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.expectations import split_by_expectations, with_expectation_flags
from lakehouse_assets.lib.declare.sinks import RecomputeSink
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.locking.table_lease import current_fence
from lakehouse_assets.lib.engine.report import RunReport, sample_written
from lakehouse_assets.lib.engine.state.ledger import BatchLedger
from lakehouse_assets.lib.engine.writing.batch import (
    PreparedQuery,
    evaluate_expectations,
    quarantine_schema,
    write_quarantine,
)
from lakehouse_assets.lib.engine.writing.writes import BatchWrite, by_keys, replace_rows_for_keys
from lakehouse_assets.lib.paths import LakehousePaths

CDF_COLUMNS = ["_change_type", "_commit_version", "_commit_timestamp"]


def _without_cdf(df: DataFrame) -> DataFrame:
    return df.drop(*[c for c in CDF_COLUMNS if c in df.columns])


def recompute_keys(
    sink: RecomputeSink,
    changes: DataFrame,
    current: DataFrame,
    transform: Callable[[DataFrame], DataFrame],
    write: BatchWrite,
    on_written: Callable[[DataFrame], None] | None = None,
) -> int:
    """Recompute the rows of the keys ``changes`` touch from ``current`` (the whole input) and
    MERGE them in; returns the rows inserted, updated or deleted. ``on_written`` gets the
    recomputed rows (cached) after the MERGE: the run's metadata previews them."""
    # Literal values (as text, so any type round-trips) let Delta prune partitions/files.
    values = [r[0] for r in changes.select(F.col(sink.reread_by).cast("string")).distinct().collect()]
    if not values:
        return 0
    if len(values) <= sink.max_literal_values:
        present = [v for v in values if v is not None]
        condition = F.col(sink.reread_by).cast("string").isin(present)
        if len(present) < len(values):
            condition = condition | F.col(sink.reread_by).isNull()
        subset = current.where(condition)
    else:
        scope = changes.select(sink.reread_by).distinct()
        subset = current.join(
            F.broadcast(scope), current[sink.reread_by].eqNullSafe(scope[sink.reread_by]), "left_semi"
        )
    touched = transform(changes).select(*sink.keys).distinct()
    # Computed once: the MERGE may scan its source twice (Delta materializes only sources it
    # considers non-deterministic), and ``on_written`` samples it.
    recomputed = sink.output(transform(subset))
    new_rows = by_keys(recomputed, touched, sink.keys, "left_semi").persist()
    try:
        written = replace_rows_for_keys(new_rows, touched, sink.keys, sink.merge_on or sink.keys, write)
        if on_written:
            on_written(new_rows)
        return written
    finally:
        new_rows.unpersist()


def prepare_recompute(
    spark: SparkSession,
    paths: LakehousePaths,
    table: TableSpec,
    inputs: dict[str, DataFrame],
    ledger: BatchLedger,
    app_id: str,
) -> PreparedQuery:
    """The recompute strategy: the stream carries only the input's new rows; the handler
    recomputes the keys they touch (see the module's docstring) and records the batch's figures
    in ``ledger``."""
    sink = cast(RecomputeSink, table.sink)  # the recompute kind's strategy (writing/sink_kinds.py)
    (param,) = table.streaming_inputs
    lookups = {p: df for p, df in inputs.items() if p != param}
    stream = _without_cdf(inputs[param])
    input_path = paths.table(table.inputs[param].table)  # type: ignore[union-attr]
    expectations = table.expectations
    fence = current_fence(table.name)  # the run's table lease, checked before each batch writes

    def rows_of(df: DataFrame) -> DataFrame:
        return table.transform(**{param: df}, **lookups)

    def passing(df: DataFrame) -> DataFrame:
        """The function's rows that pass every drop/quarantine expectation."""
        rows = rows_of(df)
        if not expectations:
            return rows
        kept, _, _ = split_by_expectations(with_expectation_flags(rows, expectations), expectations)
        return kept

    def check_expectations(changes: DataFrame, batch_id: int, report: RunReport) -> None:
        flagged = with_expectation_flags(rows_of(changes), expectations).persist()
        try:
            split = evaluate_expectations(table, flagged, report)
            report.rows_quarantined += write_quarantine(paths, table, split, flagged, app_id, batch_id, report)
        finally:
            flagged.unpersist()

    def handle(batch: DataFrame, batch_id: int) -> None:
        session = batch.sparkSession
        report = RunReport(table.name)

        def keep_sample(rows: DataFrame) -> None:
            sample = sample_written(rows)
            if sample.rows:  # (no rows recomputed: the metadata reads the table for its preview)
                report.written[table.name] = sample

        changes = _without_cdf(batch).persist()
        try:
            if changes.isEmpty():
                return
            if fence is not None:
                fence.check()
            if expectations:
                check_expectations(changes, batch_id, report)
            current = session.read.format("delta").load(input_path)
            write = BatchWrite(session, paths.table(table.name), app_id, batch_id)
            written = recompute_keys(sink, changes, current, passing, write, on_written=keep_sample)
            faults.reached(table.name, "after_table_write")
            report.rows_written += written
            # The function's rows here are the table's rows the batch changed (its aggregates or
            # its keys' history), so the batch's result is what it wrote, kept out or dropped.
            report.result_rows += written + report.rows_quarantined + report.dropped_by_expectations
            ledger.record(batch_id, report)
        finally:
            changes.unpersist()

    empty = rows_of(spark.createDataFrame([], stream.schema))
    return PreparedQuery(stream, sink.output(empty).schema, quarantine_schema(table, empty), handle)
