"""Materialization metadata: what a run did and what the table now holds."""

from __future__ import annotations

from typing import Any

import dagster as dg
from pyspark.sql import SparkSession

from lakehouse_assets.lib.engine import delta_log
from lakehouse_assets.lib.engine.report import RunReport, WrittenSample, sample_written

# What describes the table's content, so it can be carried over while the version stands still.
CONTENT_KEYS = ("dagster/row_count", "dagster/column_schema", "preview")


def markdown_preview(rows: list[dict[str, Any]], columns: list[str], width: int = 40) -> str:
    def cell(value: Any) -> str:
        text = "" if value is None else str(value)
        text = text.replace("|", "\\|").replace("\n", " ")
        return text if len(text) <= width else text[: width - 1] + "…"

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


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
    if version is not None and recorded and int(previous["delta_version"].value) == version and all(
        k in previous for k in CONTENT_KEYS
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
        "preview": dg.MetadataValue.md(markdown_preview(sample.rows, sample.schema.fieldNames())),
        **base,
    }


def run_metadata(report: RunReport) -> dict[str, Any]:
    """Figures of one run, numeric so the Dagster UI plots them over time."""
    metadata: dict[str, Any] = {
        "rows_read": report.rows_read,
        "rows_written": report.rows_written,
        "rows_quarantined": report.rows_quarantined,
        "rows_dropped": report.rows_dropped,
        "micro_batches": report.batches,
        "duration_s": dg.MetadataValue.float(report.duration_s),
    }
    if report.late_rows_dropped or report.state_rows:
        metadata["late_rows_dropped_by_watermark"] = report.late_rows_dropped
        metadata["state_rows"] = report.state_rows
    if report.warnings:
        metadata["warnings"] = dg.MetadataValue.md("\n".join(f"- {w}" for w in report.warnings))
    for name, failed in sorted(report.expectation_failures.items()):
        metadata[f"expectation/{name}/failed"] = failed
        metadata[f"expectation/{name}/passed"] = report.expectation_rows - failed
    return metadata
