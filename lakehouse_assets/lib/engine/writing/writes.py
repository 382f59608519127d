"""Idempotent Delta writes of one micro-batch.

Every write carries Delta's ``txnAppId``/``txnVersion`` (the writer options for appends, the
``spark.databricks.delta.write.txn*`` session settings for MERGE), keyed by the checkpoint's
identity and the batch id, so a micro-batch replayed after a crash never writes twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType

from lakehouse_assets.lib.declare.sinks import KafkaSink, MergeSink
from lakehouse_assets.lib.declare.sql_names import column, quote
from lakehouse_assets.lib.engine.state import delta_sql

DELETE_FLAG = "__lh_delete"


@dataclass(frozen=True)
class BatchWrite:
    """One idempotent write of one micro-batch into one table."""

    spark: SparkSession
    path: str
    app_id: str
    batch_id: int


@contextmanager
def idempotent_dml(write: BatchWrite) -> Iterator[None]:
    """Make the next DML commit (MERGE/UPDATE/DELETE) idempotent for this batch."""
    conf = write.spark.conf
    conf.set("spark.databricks.delta.write.txnAppId", write.app_id)
    conf.set("spark.databricks.delta.write.txnVersion", str(write.batch_id))
    try:
        yield
    finally:
        conf.unset("spark.databricks.delta.write.txnAppId")
        conf.unset("spark.databricks.delta.write.txnVersion")


def append_batch(df: DataFrame, write: BatchWrite) -> None:
    (
        df.write.format("delta")
        .mode("append")
        .option("txnAppId", write.app_id)
        .option("txnVersion", write.batch_id)
        .save(write.path)
    )


def _orderable(df: DataFrame) -> list[str]:
    unorderable = (MapType, ArrayType, StructType)
    return [f.name for f in df.schema.fields if not isinstance(f.dataType, unorderable)]


def keep_one_per_key(df: DataFrame, keys: list[str], order_by: list[str] | None = None) -> DataFrame:
    """One row per key: the first by ``order_by`` (default: every orderable column), so the
    choice among re-deliveries does not depend on how rows were grouped into batches."""
    order = order_by or sorted(c for c in _orderable(df) if c not in keys)
    window = Window.partitionBy(*keys).orderBy(*[F.col(c).asc_nulls_last() for c in order])
    return df.withColumn("__lh_rank", F.row_number().over(window)).where("__lh_rank = 1").drop("__lh_rank")


def merge_batch(sink: MergeSink, batch: DataFrame, write: BatchWrite) -> int:
    """Upsert ``batch`` on the sink's keys; returns the rows inserted or updated."""
    order = [sink.sequence_by] if sink.sequence_by else None
    if sink.sequence_by:
        batch = batch.withColumn("__lh_seq", -F.col(sink.sequence_by).cast("double"))
        order = ["__lh_seq"]
    source = keep_one_per_key(batch, sink.keys, order).drop("__lh_seq")
    condition = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in sink.keys)
    clauses = []
    if sink.when_matched == "update":
        newer = f" AND s.{quote(sink.sequence_by)} > t.{quote(sink.sequence_by)}" if sink.sequence_by else ""
        clauses.append(f"WHEN MATCHED{newer} THEN UPDATE SET *")
    clauses.append("WHEN NOT MATCHED THEN INSERT *")
    with idempotent_dml(write):
        metrics = delta_sql.merge(source, write.path, condition, clauses)
    return metrics.get("num_inserted_rows", 0) + metrics.get("num_updated_rows", 0)


KAFKA_RECORD = ("key", "value", "partition", "headers")


def publish_batch(sink: KafkaSink, batch: DataFrame) -> None:
    """Send the rows to the sink's topic (key and value as JSON objects, or the rows' own record
    columns for a sink without key columns); at least once."""
    if sink.key is None:
        messages = batch.select(*[c for c in KAFKA_RECORD if c in batch.columns])
    else:
        messages = batch.select(
            F.to_json(F.struct(*sink.key)).alias("key"), F.to_json(F.struct(*batch.columns)).alias("value")
        )
    (
        messages.write.format("kafka")
        .option("kafka.bootstrap.servers", sink.bootstrap_servers)
        .option("topic", sink.topic)
        .options(**sink.options)
        .save()
    )


def by_keys(left: DataFrame, right: DataFrame, keys: list[str], how: str) -> DataFrame:
    """``left`` semi- or anti-joined with ``right`` on ``keys``, a null key matching a null key
    (an aggregate's null group is a key like any other). ``right``'s keys are renamed first, so
    two frames of one lineage never make an ambiguous, always-true condition."""
    renamed = right.select(*[column(k).alias(f"__lh_key_{i}") for i, k in enumerate(keys)])
    condition = F.lit(True)
    for i, k in enumerate(keys):
        condition = condition & column(k).eqNullSafe(F.col(f"__lh_key_{i}"))
    return left.join(renamed, condition, how)


def replace_rows_for_keys(
    new_rows: DataFrame,
    touched: DataFrame,
    keys: list[str],
    merge_on: list[str],
    write: BatchWrite,
) -> int:
    """In one MERGE, make the target's rows for the ``touched`` keys equal ``new_rows``:
    update changed rows, insert new ones, delete those that no longer exist."""
    columns = new_rows.columns
    target = write.spark.read.format("delta").load(write.path)
    existing = by_keys(target, touched, keys, "left_semi").select(*merge_on)
    stale = by_keys(existing, new_rows.select(*merge_on), merge_on, "left_anti")
    source = new_rows.withColumn(DELETE_FLAG, F.lit(False)).unionByName(
        stale.withColumn(DELETE_FLAG, F.lit(True)), allowMissingColumns=True
    )
    on = " AND ".join(f"t.{quote(c)} <=> s.{quote(c)}" for c in merge_on)
    changed = " OR ".join(f"NOT (t.{quote(c)} <=> s.{quote(c)})" for c in columns if c not in merge_on)
    clauses = [f"WHEN MATCHED AND s.{DELETE_FLAG} THEN DELETE"]
    if changed:
        clauses.append(
            f"WHEN MATCHED AND ({changed}) THEN UPDATE SET " + ", ".join(f"{quote(c)} = s.{quote(c)}" for c in columns)
        )
    clauses.append(
        f"WHEN NOT MATCHED AND NOT s.{DELETE_FLAG} THEN INSERT ({', '.join(quote(c) for c in columns)}) "
        f"VALUES ({', '.join('s.' + quote(c) for c in columns)})"
    )
    with idempotent_dml(write):
        metrics = delta_sql.merge(source, write.path, on, clauses)
    return sum(metrics.get(k, 0) for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows"))
