"""Materialization metadata: what a run did and what the table now holds."""

from __future__ import annotations

from typing import Any

import dagster as dg
from pyspark.sql import SparkSession

from lakehouse_assets.lib.engine.report import RunReport, WrittenSample, sample_written
from lakehouse_assets.lib.engine.state import delta_log
from lakehouse_assets.lib.orchestrate import markdown

# What describes the table's content, so it can be carried over while the version stands still.
CONTENT_KEYS = ("dagster/row_count", "dagster/column_schema", "preview")
# What a run that read nothing records instead of its (zero) figures.
NO_CHANGE = "none: nothing new was read; the table is as the last run left it"


# The columns the framework adds, described once for every table.
FRAMEWORK_COLUMNS = {
    "_source_file": "the landed file (or message) the row came from",
    "_ingested_at": "when the row was ingested",
    "_rescued_data": "fields that did not fit a declared column or type, as a JSON object (null: none)",
    "failed_expectations": "the names of the expectations the row failed",
}


def describe_columns(
    schema: dg.TableSchema | dg.TableSchemaMetadataValue, descriptions: dict[str, str]
) -> dg.TableSchema:
    """``schema`` (fresh, or carried over from the last run) with each column's description:
    the table's own, else the framework's."""
    if isinstance(schema, dg.TableSchemaMetadataValue):
        schema = schema.value
    known = {**FRAMEWORK_COLUMNS, **descriptions}
    return dg.TableSchema(
        columns=[dg.TableColumn(c.name, c.type, description=known.get(c.name, c.description)) for c in schema.columns]
    )


def table_metadata(
    spark: SparkSession,
    path: str,
    previous: dict[str, Any] | None = None,
    written: WrittenSample | None = None,
    preview_rows: int = 5,
) -> dict[str, Any]:
    """Row count, schema, URI, Delta version and a few rows of the Delta table at ``path``.

    ``previous`` is the metadata of the table's last materialization: when the table is still
    at the version recorded there, its content figures are carried over instead of recomputed
    (two Spark jobs saved per table on a run that wrote nothing); otherwise the row count is the
    recorded one (0 before the first run) plus the row metrics of the commits since, and, when the
    run hands over ``written`` (a sample of what it wrote), schema and preview come from that
    sample: the table is not read back at all. A real count and read when the commits' metrics
    are unclear."""
    version = delta_log.delta_version(path)
    base = {"dagster/uri": dg.MetadataValue.path(path), "delta_version": dg.MetadataValue.int(int(version or 0))}
    previous = previous or {}
    recorded = "delta_version" in previous and "dagster/row_count" in previous
    if (
        version is not None
        and recorded
        and int(previous["delta_version"].value) == version
        and all(k in previous for k in CONTENT_KEYS)
    ):
        return {**{k: previous[k] for k in CONTENT_KEYS}, **base}
    since, known = (
        (int(previous["delta_version"].value), int(previous["dagster/row_count"].value)) if recorded else (-1, 0)
    )
    # The recorded count plus the commits since (from an empty table when the run hands over what
    # it wrote on a first run); None when a commit's effect on the count is unclear.
    count = (
        delta_log.delta_row_count(path, known, since, version)
        if version is not None and since <= version and (recorded or written is not None)
        else None
    )
    sample = written
    if sample is None or count is None:
        df = spark.read.format("delta").load(path)
        sample = sample_written(df, preview_rows)
        count = df.count() if count is None else count
    return {
        "dagster/row_count": dg.MetadataValue.int(count),
        "dagster/column_schema": dg.TableSchema(
            columns=[dg.TableColumn(f.name, f.dataType.simpleString()) for f in sample.schema.fields]
        ),
        "preview": dg.MetadataValue.md(markdown.table(sample.rows, sample.schema.fieldNames())),
        **base,
    }


# The figures of a run that changed something, kept under ``last_change/`` by the runs after it
# that changed nothing: the asset's overview still shows what the table last took in.
RUN_FIGURES = ("rows_read", "rows_written", "rows_quarantined", "rows_dropped", "micro_batches", "duration_s")
LAST_CHANGE = "last_change/"


def last_change(previous: dict[str, Any] | None) -> dict[str, Any]:
    """What the last run that changed the table recorded, from the metadata of the last
    materialization (itself such a run, or one that carried them on)."""
    previous = previous or {}
    if "rows_read" in previous:
        return {f"{LAST_CHANGE}{k}": previous[k] for k in RUN_FIGURES if k in previous}
    return {k: v for k, v in previous.items() if k.startswith(LAST_CHANGE)}


def quarantine_run_metadata(report: RunReport) -> dict[str, Any]:
    """The run's figure for its quarantine table (no figure when it read nothing, as in
    :func:`run_metadata`)."""
    return {"change": NO_CHANGE} if report.changed_nothing else {"rows_written": report.rows_quarantined}


def run_metadata(report: RunReport) -> dict[str, Any]:
    """Figures of one run, numeric so the Dagster UI plots them over time. They add up:
    ``rows_read`` = ``rows_written`` + ``rows_quarantined`` + ``rows_dropped`` (the sum of the
    ``dropped_*`` kinds) + ``reduced_by_function``. A run that read nothing records no figures (see
    :data:`NO_CHANGE`): the plots and the overview keep the last run that did something."""
    if report.changed_nothing:
        metadata: dict[str, Any] = {"change": NO_CHANGE}
    else:
        metadata = {
            "rows_read": report.rows_read,
            "rows_written": report.rows_written,
            "rows_quarantined": report.rows_quarantined,
            "rows_dropped": report.rows_dropped,
            "dropped_expectations": report.dropped_by_expectations,
            "dropped_duplicates": report.dropped_duplicates,
            "dropped_late": report.dropped_late,
            "reduced_by_function": report.rows_reduced,
            "micro_batches": report.batches,
            "duration_s": dg.MetadataValue.float(report.duration_s),
        }
    if report.state_rows or report.watermark:
        metadata["state_rows"] = report.state_rows
        metadata["watermark"] = report.watermark or "not set yet: no event read"
    if report.refresh:
        metadata["refresh"] = report.refresh
    if report.changes_waiting is not None:
        metadata["changes_waiting"] = report.changes_waiting
    if report.schema_changes:
        metadata["schema_changes"] = dg.MetadataValue.md(markdown.bullet_list(report.schema_changes))
    if report.warnings:
        metadata["warnings"] = dg.MetadataValue.md(markdown.bullet_list(report.warnings))
    for name, failed in sorted(report.expectation_failures.items()):
        metadata[f"expectation/{name}/failed"] = failed
        metadata[f"expectation/{name}/passed"] = report.expectation_rows - failed
    return metadata
