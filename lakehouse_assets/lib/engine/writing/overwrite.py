"""The overwrite write strategy: the function's whole result replaces the table.

For a table no incremental strategy fits (a materialized view joining several inputs, a global
aggregate): every input is read as a snapshot, the function runs once, its rows (after the
expectations) overwrite the table in one Delta commit. The input versions it read are kept in
the table's checkpoint folder; a run whose inputs are all still at those versions starts no
Spark job. A run killed before the commit leaves the table as it was; one killed after it, before
the versions are saved, recomputes the same rows again: exact either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pyspark.sql import SparkSession

from lakehouse_assets.lib.declare.expectations import with_expectation_flags
from lakehouse_assets.lib.declare.inputs import CatalogInput, TableInput
from lakehouse_assets.lib.declare.sinks import OverwriteSink, SnapshotCdcSink
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.reading.read import read_inputs
from lakehouse_assets.lib.engine.report import RunReport, sample_written
from lakehouse_assets.lib.engine.state import delta_log, storage
from lakehouse_assets.lib.engine.state.checkpoint import ensure_table
from lakehouse_assets.lib.engine.writing.batch import evaluate_expectations, publisher
from lakehouse_assets.lib.engine.writing.snapshot_cdc import apply_snapshot, stored_schema
from lakehouse_assets.lib.paths import LakehousePaths


def _state_file(paths: LakehousePaths, table: TableSpec) -> str:
    return f"{paths.checkpoint(table.checkpoint_name)}/input_versions.json"


def input_versions(paths: LakehousePaths, table: TableSpec) -> dict[str, int | None]:
    """The current Delta version of every table the function reads (from the logs: no Spark)."""
    names = sorted({i.table for i in table.inputs.values() if isinstance(i, TableInput)})
    return {name: delta_log.delta_version(paths.table(name)) for name in names}


def run_overwrite(
    spark: SparkSession, paths: LakehousePaths, table: TableSpec, report: RunReport, log: Callable[[str], None]
) -> None:
    """Bring the table up to date by recomputing it whole, unless no input moved."""
    versions = input_versions(paths, table)
    saved = storage.read_text(_state_file(paths, table))
    exists = delta_log.delta_version(paths.table(table.name)) is not None
    assert isinstance(table.sink, OverwriteSink)
    # A catalog table's changes are not tracked: a view reading one is recomputed every run.
    tracked = not any(isinstance(i, CatalogInput) for i in table.inputs.values())
    if exists and saved is not None and json.loads(saved) == versions and not table.sink.always and tracked:
        log(f"{table.name}: every input is at the version of the last run ({versions}); not recomputed")
        return
    frames = read_inputs(spark, paths, table, log)
    rows = table.transform(**frames)
    flagged = with_expectation_flags(rows, table.expectations).persist()
    try:
        split = evaluate_expectations(table, flagged, report)
        published = publisher(table, rows)(split.kept)
        sink = table.sink
        snapshot = isinstance(sink, SnapshotCdcSink)
        if isinstance(sink, SnapshotCdcSink):
            ensure_table(spark, paths, table.name, stored_schema(published.schema, sink), table, main=True)
            applied = apply_snapshot(spark, paths.table(table.name), published, sink)
        else:
            ensure_table(spark, paths, table.name, published.schema, table, main=True)
            published.write.format("delta").mode("overwrite").save(paths.table(table.name))
            applied = split.kept_rows
            report.written[table.name] = sample_written(published)
        faults.reached(table.name, "after_table_write")
    finally:
        flagged.unpersist()
    storage.write_text(_state_file(paths, table), json.dumps(versions))
    report.refresh = "full"
    report.batches += 1
    report.rows_read += split.rows
    # A snapshot's rows that changed nothing are what its function "reduced".
    report.result_rows += applied if snapshot else split.rows
    report.rows_written += applied
    how = "applied as changes" if snapshot else "recomputed whole"
    log(f"{table.name}: {how} from {versions}: {applied} rows")
