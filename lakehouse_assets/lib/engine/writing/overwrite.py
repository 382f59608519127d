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
from dataclasses import dataclass
from typing import cast

from pyspark.sql import DataFrame, SparkSession

from lakehouse_assets.lib.declare.expectations import with_expectation_flags
from lakehouse_assets.lib.declare.inputs import CatalogInput, inputs_of_kind
from lakehouse_assets.lib.declare.sinks import WholeResultSink
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.reading.input_kinds import read_inputs
from lakehouse_assets.lib.engine.report import RunReport, sample_written
from lakehouse_assets.lib.engine.state import delta_log, storage
from lakehouse_assets.lib.engine.state.checkpoint import ensure_table
from lakehouse_assets.lib.engine.writing.batch import evaluate_expectations, publisher
from lakehouse_assets.lib.paths import LakehousePaths


def _state_file(paths: LakehousePaths, table: TableSpec) -> str:
    return f"{paths.checkpoint(table.checkpoint_name)}/input_versions.json"


def input_versions(paths: LakehousePaths, table: TableSpec) -> dict[str, int | None]:
    """The current Delta version of every table the function reads (from the logs: no Spark)."""
    names = sorted({i.upstream_table for i in table.inputs.values() if i.upstream_table})
    return {name: delta_log.delta_version(paths.table(name)) for name in names}


@dataclass(frozen=True)
class WholeWritten:
    """What writing a whole result did: the rows written, how the log says it was written, and
    the rows the function's result counts as (None: every row it returned)."""

    rows_written: int
    how: str
    result_rows: int | None = None


# Writes a whole result (the session, the data root, the table, its published rows, the rows kept).
WholeWrite = Callable[[SparkSession, LakehousePaths, TableSpec, DataFrame, int, RunReport], WholeWritten]


def replace_whole(
    spark: SparkSession, paths: LakehousePaths, table: TableSpec, published: DataFrame, kept: int, report: RunReport
) -> WholeWritten:
    """The overwrite sink's write: the rows replace the table in one Delta commit."""
    ensure_table(spark, paths, table.name, published.schema, table, main=True)
    published.write.format("delta").mode("overwrite").save(paths.table(table.name))
    report.written[table.name] = sample_written(published)
    return WholeWritten(kept, "recomputed whole")


def run_overwrite(
    spark: SparkSession,
    paths: LakehousePaths,
    table: TableSpec,
    report: RunReport,
    log: Callable[[str], None],
    write_whole: WholeWrite,
) -> None:
    """Bring the table up to date by computing its whole result, unless no input moved, and
    writing it with ``write_whole`` (the sink kind's)."""
    versions = input_versions(paths, table)
    saved = storage.read_text(_state_file(paths, table))
    exists = delta_log.delta_version(paths.table(table.name)) is not None
    # A catalog table's changes are not tracked: a view reading one is recomputed every run.
    tracked = not inputs_of_kind(table.inputs, CatalogInput)
    if (
        exists
        and saved is not None
        and json.loads(saved) == versions
        and not cast(WholeResultSink, table.sink).always
        and tracked
    ):
        log(f"{table.name}: every input is at the version of the last run ({versions}); not recomputed")
        return
    frames = read_inputs(spark, paths, table, log)
    rows = table.transform(**frames)
    flagged = with_expectation_flags(rows, table.expectations).persist()
    try:
        split = evaluate_expectations(table, flagged, report)
        published = publisher(table, rows)(split.kept)
        written = write_whole(spark, paths, table, published, split.kept_rows, report)
        faults.reached(table.name, "after_table_write")
    finally:
        flagged.unpersist()
    storage.write_text(_state_file(paths, table), json.dumps(versions))
    report.refresh = "full"
    report.batches += 1
    report.rows_read += split.rows
    report.result_rows += split.rows if written.result_rows is None else written.result_rows
    report.rows_written += written.rows_written
    log(f"{table.name}: {written.how} from {versions}: {written.rows_written} rows")
