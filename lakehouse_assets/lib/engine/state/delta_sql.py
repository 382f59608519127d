"""Delta operations on path-based tables, as Delta's SQL.

The same statements run on a classic session and on a Spark Connect client. (Delta's Python
``DeltaTable`` needs Delta's Connect plugin on the server, which is not on Maven Central for
Delta 4.4; this module is the one place to switch to it.)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from lakehouse_assets.lib.declare import sql_names
from lakehouse_assets.lib.engine.state import delta_log

quote = sql_names.quote


def table_ref(path: str) -> str:
    """The SQL name of the Delta table at ``path``."""
    return f"delta.{quote(path)}"


def is_delta_table(path: str) -> bool:
    """Whether ``path`` holds a Delta table (its log has a commit), read from storage."""
    return delta_log.delta_version(path) is not None


def sql_type(data_type: DataType) -> str:
    """``data_type`` as SQL DDL, field names quoted at every depth."""
    if isinstance(data_type, StructType):
        return "struct<" + ",".join(f"{quote(f.name)}:{sql_type(f.dataType)}" for f in data_type.fields) + ">"
    if isinstance(data_type, ArrayType):
        return f"array<{sql_type(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"map<{sql_type(data_type.keyType)},{sql_type(data_type.valueType)}>"
    return data_type.simpleString()


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def create_table(
    spark: SparkSession,
    path: str,
    schema: StructType,
    partition_by: Sequence[str],
    properties: dict[str, str],
    cluster_by: Sequence[str] = (),
) -> None:
    """Create the Delta table at ``path`` unless it exists, partitioned or with liquid clustering;
    every column nullable."""
    columns = []
    for f in schema.fields:
        comment = f.metadata.get("comment")
        columns.append(f"{quote(f.name)} {sql_type(f.dataType)}" + (f" COMMENT {_literal(comment)}" if comment else ""))
    statement = f"CREATE TABLE IF NOT EXISTS {table_ref(path)} ({', '.join(columns)}) USING DELTA"
    if partition_by:
        statement += f" PARTITIONED BY ({', '.join(quote(c) for c in partition_by)})"
    if cluster_by:
        statement += f" CLUSTER BY ({', '.join(quote(c) for c in cluster_by)})"
    if properties:
        statement += (
            " TBLPROPERTIES (" + ", ".join(f"{_literal(k)} = {_literal(v)}" for k, v in properties.items()) + ")"
        )
    spark.sql(statement)


def add_missing_columns(spark: SparkSession, path: str, schema: StructType) -> list[str]:
    """Add to the Delta table at ``path`` the columns of ``schema`` it lacks (compared
    case-insensitively, as Spark resolves names), at the end; ``name type`` of each added."""
    present = {f.name.lower() for f in spark.read.format("delta").load(path).schema.fields}
    missing = [f for f in schema.fields if f.name.lower() not in present]
    if missing:
        columns = ", ".join(f"{quote(f.name)} {sql_type(f.dataType)}" for f in missing)
        spark.sql(f"ALTER TABLE {table_ref(path)} ADD COLUMNS ({columns})")
    return [f"{f.name} {sql_type(f.dataType)}" for f in missing]


def delete_all_rows(spark: SparkSession, path: str) -> None:
    spark.sql(f"DELETE FROM {table_ref(path)}")


def detail(spark: SparkSession, path: str) -> dict[str, Any]:
    row = spark.sql(f"DESCRIBE DETAIL {table_ref(path)}").first()
    return row.asDict() if row else {}


def table_id(spark: SparkSession, path: str) -> str:
    return str(detail(spark, path)["id"])


def optimize(spark: SparkSession, path: str) -> tuple[int, int]:
    """Compact the table's small files; (files removed, files added)."""
    row = spark.sql(f"OPTIMIZE {table_ref(path)}").select("metrics.numFilesRemoved", "metrics.numFilesAdded").first()
    return (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)


def vacuum(spark: SparkSession, path: str, retention_hours: float) -> None:
    spark.sql(f"VACUUM {table_ref(path)} RETAIN {retention_hours} HOURS")


@contextmanager
def as_view(df: DataFrame) -> Iterator[str]:
    """``df`` as a temporary view, named uniquely, for the length of the block."""
    name = f"__lh_source_{uuid.uuid4().hex}"
    df.createOrReplaceTempView(name)
    try:
        yield name
    finally:
        df.sparkSession.catalog.dropTempView(name)


def merge(source: DataFrame, path: str, on: str, clauses: Sequence[str]) -> dict[str, int]:
    """``MERGE INTO`` the table at ``path`` (alias ``t``) from ``source`` (alias ``s``) with the
    ``WHEN …`` clauses; the statement's row counts (zeros when Delta skipped it as a replay)."""
    with as_view(source) as view:
        result = source.sparkSession.sql(
            f"MERGE INTO {table_ref(path)} t USING {quote(view)} s ON {on} {' '.join(clauses)}"
        ).first()
    return {k: int(v or 0) for k, v in (result.asDict() if result else {}).items()}
