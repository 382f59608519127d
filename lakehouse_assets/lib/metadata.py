"""Materialization metadata: what a run did and what the table now holds."""

from __future__ import annotations

from typing import Any

import dagster as dg
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse_assets.lib.runner import RunReport


def markdown_preview(rows: list[dict[str, Any]], columns: list[str], width: int = 40) -> str:
    def cell(value: Any) -> str:
        text = "" if value is None else str(value)
        text = text.replace("|", "\\|").replace("\n", " ")
        return text if len(text) <= width else text[: width - 1] + "…"

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def table_metadata(spark: SparkSession, path: str, preview_rows: int = 5) -> dict[str, Any]:
    """Row count, schema, URI, Delta version and a few rows of the Delta table at ``path``."""
    table = DeltaTable.forPath(spark, path)
    df = table.toDF()
    version = table.history(1).select("version").first()[0]
    # As text, so values Python cannot hold (timestamps before year 1 after a time-zone shift) show.
    as_text = df.select(*[F.col(f"`{c}`").cast("string").alias(c) for c in df.columns])
    rows = [r.asDict() for r in as_text.limit(preview_rows).collect()]
    return {
        "dagster/row_count": dg.MetadataValue.int(df.count()),
        "dagster/uri": dg.MetadataValue.path(path),
        "dagster/column_schema": dg.TableSchema(
            columns=[dg.TableColumn(f.name, f.dataType.simpleString()) for f in df.schema.fields]
        ),
        "delta_version": dg.MetadataValue.int(int(version)),
        "preview": dg.MetadataValue.md(markdown_preview(rows, df.columns)),
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
    for name, failed in sorted(report.expectation_failures.items()):
        metadata[f"expectation/{name}/failed"] = failed
        metadata[f"expectation/{name}/passed"] = report.expectation_rows - failed
    return metadata
