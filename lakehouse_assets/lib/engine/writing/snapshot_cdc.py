"""Snapshot CDC: each run's full snapshot of a source applied to the table as changes, in one
MERGE (Lakeflow's ``create_auto_cdc_from_snapshot_flow``).

SCD type 1: new keys inserted, changed rows updated, keys absent from the snapshot deleted.
SCD type 2: a new or changed row opens a version; the current version of a changed or vanished
key is closed. Versions are numbered by snapshot: the next number is one more than the highest
in the table, so it is decided inside the same commit and a retry after a crash applies the same
snapshot to the same state, which changes nothing.
"""

from __future__ import annotations

from typing import cast

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StructField, StructType

from lakehouse_assets.lib.declare.cdc import IS_CURRENT, VALID_FROM, VALID_TO
from lakehouse_assets.lib.declare.sinks import SnapshotCdcSink
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.report import RunReport
from lakehouse_assets.lib.engine.state import delta_sql
from lakehouse_assets.lib.engine.state.checkpoint import ensure_table
from lakehouse_assets.lib.engine.writing.overwrite import WholeWritten
from lakehouse_assets.lib.paths import LakehousePaths

INSERT = "__lh_insert"


def stored_schema(snapshot: StructType, sink: SnapshotCdcSink) -> StructType:
    """The table's columns: the snapshot's, and with SCD type 2 the version columns."""
    if sink.scd_type == 1:
        return snapshot
    versions = [
        StructField(VALID_FROM, LongType()),
        StructField(VALID_TO, LongType()),
        StructField(IS_CURRENT, BooleanType()),
    ]
    return StructType([*snapshot.fields, *versions])


def _q(name: str) -> str:
    return delta_sql.quote(name)


def write_snapshot(
    spark: SparkSession, paths: LakehousePaths, table: TableSpec, snapshot: DataFrame, kept: int, report: RunReport
) -> WholeWritten:
    """The snapshot CDC sink's write of a whole result: applied as changes. A snapshot's rows that
    changed nothing are what its function "reduced"."""
    sink = cast(SnapshotCdcSink, table.sink)  # the snapshot_cdc kind's strategy (writing/sink_kinds.py)
    ensure_table(spark, paths, table.name, stored_schema(snapshot.schema, sink), table, main=True)
    applied = apply_snapshot(spark, paths.table(table.name), snapshot, sink)
    return WholeWritten(applied, "applied as changes", result_rows=applied)


def apply_snapshot(spark: SparkSession, path: str, snapshot: DataFrame, sink: SnapshotCdcSink) -> int:
    """Make the table at ``path`` follow ``snapshot``; the rows inserted, updated or deleted."""
    keys, columns = list(sink.keys), snapshot.columns
    changed = " OR ".join(f"NOT (t.{_q(c)} <=> s.{_q(c)})" for c in columns if c not in keys) or "FALSE"
    insert_columns = ", ".join(_q(c) for c in columns)
    insert_values = ", ".join(f"s.{_q(c)}" for c in columns)
    if sink.scd_type == 1:
        on = " AND ".join(f"t.{_q(k)} <=> s.{_q(k)}" for k in keys)
        clauses = [
            f"WHEN MATCHED AND ({changed}) THEN UPDATE SET " + ", ".join(f"{_q(c)} = s.{_q(c)}" for c in columns),
            f"WHEN NOT MATCHED THEN INSERT ({insert_columns}) VALUES ({insert_values})",
            "WHEN NOT MATCHED BY SOURCE THEN DELETE",
        ]
        metrics = delta_sql.merge(snapshot, path, on, clauses)
    else:
        table = spark.read.format("delta").load(path)
        latest = table.agg(F.max(F.greatest(F.col(VALID_FROM), F.coalesce(F.col(VALID_TO), F.lit(0))))).first()
        number = int((latest[0] if latest else None) or 0) + 1
        current = table.where(F.col(IS_CURRENT)).select(*columns)
        opened = snapshot.exceptAll(current).withColumn(INSERT, F.lit(True))
        ended = current.exceptAll(snapshot).select(*[F.col(_q(k)).alias(f"__lh_key_{i}") for i, k in enumerate(keys)])
        source = opened.unionByName(ended.withColumn(INSERT, F.lit(False)), allowMissingColumns=True)
        on = f"t.{IS_CURRENT} AND NOT s.{INSERT} AND " + " AND ".join(
            f"t.{_q(k)} <=> s.__lh_key_{i}" for i, k in enumerate(keys)
        )
        clauses = [
            f"WHEN MATCHED THEN UPDATE SET {VALID_TO} = {number}, {IS_CURRENT} = false",
            f"WHEN NOT MATCHED AND s.{INSERT} THEN INSERT ({insert_columns}, {VALID_FROM}, {VALID_TO}, {IS_CURRENT}) "
            f"VALUES ({insert_values}, {number}, NULL, true)",
        ]
        metrics = delta_sql.merge(source, path, on, clauses)
    return sum(metrics.get(k, 0) for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows"))
