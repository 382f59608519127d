"""Sinks: how a micro-batch lands in its Delta table, idempotently.

Every write carries Delta's ``txnAppId``/``txnVersion`` (the writer options for appends, the
``spark.databricks.delta.write.txn*`` session settings for MERGE), keyed by the checkpoint's
identity and the batch id, so a micro-batch replayed after a crash never writes twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType

from lakehouse_assets.lib import storage

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


def last_commit_metrics(spark: SparkSession, path: str) -> dict[str, int]:
    version = storage.delta_version(spark, path)
    return {} if version is None else storage.delta_commit_metrics(spark, path, version)


def _orderable(df: DataFrame) -> list[str]:
    unorderable = (MapType, ArrayType, StructType)
    return [f.name for f in df.schema.fields if not isinstance(f.dataType, unorderable)]


def keep_one_per_key(df: DataFrame, keys: list[str], order_by: list[str] | None = None) -> DataFrame:
    """One row per key: the first by ``order_by`` (default: every orderable column), so the
    choice among re-deliveries does not depend on how rows were grouped into batches."""
    order = order_by or sorted(c for c in _orderable(df) if c not in keys)
    window = Window.partitionBy(*keys).orderBy(*[F.col(c).asc_nulls_last() for c in order])
    return df.withColumn("__lh_rank", F.row_number().over(window)).where("__lh_rank = 1").drop(
        "__lh_rank"
    )


class Sink:
    """Base class: writes one micro-batch of a table's rows."""

    #: Recompute sinks receive the raw input changes and apply the transform themselves.
    recomputes = False

    def write(self, batch: DataFrame, write: BatchWrite, rows: int | None = None) -> int:
        """Write ``batch``; returns the rows written. ``rows``: the batch's row count when the
        caller already knows it (saves a pass over the batch)."""
        raise NotImplementedError


@dataclass(frozen=True)
class AppendSink(Sink):
    """Append every row (bronze, sessions, attribution)."""

    def write(self, batch: DataFrame, write: BatchWrite, rows: int | None = None) -> int:
        append_batch(batch, write)
        return batch.count() if rows is None else rows


@dataclass(frozen=True)
class MergeSink(Sink):
    """Upsert on ``keys``: ``ignore`` keeps the first row ever seen for a key (insert-only
    deduplication); ``update`` overwrites it, or only with a newer ``sequence_by`` when given."""

    keys: list[str]
    when_matched: Literal["ignore", "update"] = "ignore"
    sequence_by: str | None = None

    def write(self, batch: DataFrame, write: BatchWrite, rows: int | None = None) -> int:
        order = [self.sequence_by] if self.sequence_by else None
        if self.sequence_by:
            batch = batch.withColumn("__lh_seq", -F.col(self.sequence_by).cast("double"))
            order = ["__lh_seq"]
        source = keep_one_per_key(batch, self.keys, order).drop("__lh_seq")
        condition = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in self.keys)
        merge = DeltaTable.forPath(write.spark, write.path).alias("t").merge(source.alias("s"), condition)
        if self.when_matched == "update":
            newer = f"s.`{self.sequence_by}` > t.`{self.sequence_by}`" if self.sequence_by else None
            merge = merge.whenMatchedUpdateAll(condition=newer)
        merge = merge.whenNotMatchedInsertAll()
        with idempotent_dml(write):
            merge.execute()
        metrics = last_commit_metrics(write.spark, write.path)
        return metrics.get("numTargetRowsInserted", 0) + metrics.get("numTargetRowsUpdated", 0)


def replace_rows_for_keys(
    new_rows: DataFrame,
    touched: DataFrame,
    keys: list[str],
    merge_on: list[str],
    write: BatchWrite,
) -> int:
    """In one MERGE, make the target's rows for the ``touched`` keys equal ``new_rows``:
    update changed rows, insert new ones, delete those that no longer exist."""
    target = DeltaTable.forPath(write.spark, write.path)
    columns = new_rows.columns
    existing = target.toDF().join(touched, keys, "left_semi").select(*merge_on)
    stale = existing.join(new_rows.select(*merge_on), merge_on, "left_anti")
    source = new_rows.withColumn(DELETE_FLAG, F.lit(False)).unionByName(
        stale.withColumn(DELETE_FLAG, F.lit(True)), allowMissingColumns=True
    )
    on = " AND ".join(f"t.`{c}` <=> s.`{c}`" for c in merge_on)
    changed = " OR ".join(f"NOT (t.`{c}` <=> s.`{c}`)" for c in columns if c not in merge_on)
    merge = (
        target.alias("t")
        .merge(source.alias("s"), on)
        .whenMatchedDelete(condition=f"s.{DELETE_FLAG}")
    )
    if changed:
        merge = merge.whenMatchedUpdate(condition=changed, set={c: f"s.`{c}`" for c in columns})
    merge = merge.whenNotMatchedInsert(
        condition=f"NOT s.{DELETE_FLAG}", values={c: f"s.`{c}`" for c in columns}
    )
    with idempotent_dml(write):
        merge.execute()
    metrics = last_commit_metrics(write.spark, write.path)
    return sum(metrics.get(k, 0) for k in ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"))


@dataclass(frozen=True)
class RecomputeSink(Sink):
    """Exact incremental results: for the keys a micro-batch touches, recompute the table's
    rows from the current input and replace them in one MERGE.

    ``scope`` names an input column that bounds what must be re-read (a partition column such as
    ``event_date`` keeps the re-read small); ``finalize`` turns the transform's rows into the
    table's rows (for example CDC changes into SCD2 history).
    """

    keys: list[str]
    scope: str
    merge_on: list[str] | None = None
    finalize: Callable[[DataFrame], DataFrame] | None = None
    max_literal_scope: int = 5000
    recomputes = True

    def output(self, rows: DataFrame) -> DataFrame:
        return self.finalize(rows) if self.finalize else rows

    def write_recomputed(
        self,
        changes: DataFrame,
        read_input: Callable[[], DataFrame],
        transform: Callable[[DataFrame], DataFrame],
        write: BatchWrite,
        on_written: Callable[[DataFrame], None] | None = None,
    ) -> int:
        """Recompute the touched keys' rows and MERGE them in; returns the rows inserted, updated
        or deleted. ``on_written`` gets the recomputed rows (cached) after the MERGE: the run's
        metadata previews them instead of reading the table back."""
        # Literal values (as text, so any type round-trips) let Delta prune partitions/files.
        scope_values = [r[0] for r in changes.select(F.col(self.scope).cast("string")).distinct().collect()]
        if not scope_values:
            return 0
        current = read_input()
        if len(scope_values) <= self.max_literal_scope:
            present = [v for v in scope_values if v is not None]
            condition = F.col(self.scope).cast("string").isin(present)
            if len(present) < len(scope_values):
                condition = condition | F.col(self.scope).isNull()
            subset = current.where(condition)
        else:
            scope = changes.select(self.scope).distinct()
            subset = current.join(F.broadcast(scope), current[self.scope].eqNullSafe(scope[self.scope]), "left_semi")
        touched = transform(changes).select(*self.keys).distinct()
        # Computed once: the MERGE may scan its source twice (Delta materializes only sources it
        # considers non-deterministic), and ``on_written`` samples it.
        recomputed = self.output(transform(subset))
        # (a join on column names puts the keys first: back to the table's column order)
        new_rows = recomputed.join(touched, self.keys, "left_semi").select(*recomputed.columns).persist()
        try:
            written = replace_rows_for_keys(new_rows, touched, self.keys, self.merge_on or self.keys, write)
            if on_written:
                on_written(new_rows)
            return written
        finally:
            new_rows.unpersist()


def merge(keys: list[str], when_matched: Literal["ignore", "update"] = "ignore", sequence_by: str | None = None) -> MergeSink:
    return MergeSink(keys, when_matched, sequence_by)


def append() -> AppendSink:
    return AppendSink()


def recompute(keys: list[str], scope: str, **kwargs: object) -> RecomputeSink:
    return RecomputeSink(keys, scope, **kwargs)  # type: ignore[arg-type]


__all__ = [
    "AppendSink",
    "BatchWrite",
    "MergeSink",
    "RecomputeSink",
    "Sink",
    "append",
    "merge",
    "recompute",
    "replace_rows_for_keys",
]
