"""A table's checkpoint and outputs: the writer identity, table creation, full refresh, and the
guard against restarting from nothing into a table that holds rows."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from lakehouse_assets.lib.declare.sinks import DeltaPathSink
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine import delta_sql, storage
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.settings import LakehousePaths


def query_checkpoint(paths: LakehousePaths, table: TableSpec) -> str:
    return f"{paths.checkpoint(table.checkpoint_name)}/query"


def uncommitted_batch(paths: LakehousePaths, table: TableSpec) -> bool:
    """The query's last planned micro-batch has no commit: the next run replays it."""
    query = query_checkpoint(paths, table)
    ids = [int(n) for n in storage.list_names(f"{query}/offsets") if n.isdigit()]
    return bool(ids) and not storage.exists(f"{query}/commits/{max(ids)}")


def app_id(paths: LakehousePaths, table: TableSpec) -> str:
    """Identity of the table's checkpoint: new after a full refresh, stable across restarts,
    so Delta's txnVersion dedup never skips a batch of a rebuilt table."""
    path = f"{paths.checkpoint(table.checkpoint_name)}/app_id"
    identity = storage.read_text(path)
    if not identity:
        identity = f"{table.name}{'-' + table.flow if table.flow else ''}-{uuid.uuid4()}"
        storage.write_text(path, identity)
    return identity.strip()


def ensure_table(
    spark: SparkSession, paths: LakehousePaths, name: str, schema: StructType, table: TableSpec, main: bool
) -> list[str]:
    """Create the Delta table ``name`` (the table itself when ``main``, else its quarantine)
    with change data feed on, unless it exists; an existing table gains the columns of
    ``schema`` it lacks (nullable: earlier rows read null). A sentence per column added."""
    path = paths.table(name)
    # The schema last reconciled with the table: an unchanged plan costs one small read, not a
    # Delta snapshot of the table.
    reconciled = f"{paths.checkpoint(table.checkpoint_name)}/columns/{name}.json"
    if delta_sql.is_delta_table(path):
        if storage.read_text(reconciled) == schema.json():
            return []
        added = delta_sql.add_missing_columns(spark, path, schema)
        storage.write_text(reconciled, schema.json())
        return [f"{name}: added column {c}" for c in added]
    log_dir = f"{path}/_delta_log"
    if storage.exists(log_dir):
        # A creation cut off before its first commit (a killed engine or run) leaves a log with
        # no commit; Delta then answers CREATE TABLE IF NOT EXISTS without creating anything.
        # No commit means no table: the leftovers go.
        storage.delete(log_dir)
    properties = {"delta.enableChangeDataFeed": "true"}
    properties.update(table.table_properties if main else {})
    delta_sql.create_table(
        spark, path, schema, table.partition_by if main else [], properties, table.cluster_by if main else []
    )
    if not delta_sql.is_delta_table(path):
        raise LakehouseError(f"{name}: creating the Delta table at {path} left no commit in its log; check the storage")
    storage.write_text(reconciled, schema.json())
    return []


def full_refresh(spark: SparkSession, paths: LakehousePaths, table: TableSpec, log: Callable[[str], None]) -> None:
    """Forget the checkpoint and empty the outputs; keeping the tables' identity lets
    downstream change-feed readers see the rebuild as deletes and inserts."""
    log(f"{table.name}: full refresh: resetting checkpoint and emptying {table.outputs}")
    storage.delete(paths.checkpoint(table.name))
    for name in table.outputs:
        path = table.sink.path if isinstance(table.sink, DeltaPathSink) and name == table.name else paths.table(name)
        if delta_sql.is_delta_table(path):
            delta_sql.delete_all_rows(spark, path)


def guard_checkpoint(spark: SparkSession, paths: LakehousePaths, table: TableSpec) -> None:
    """Refuse to restart from nothing into a table that already holds rows: without its
    checkpoint the query would re-read every input and duplicate data. A further flow
    (``append_flow``) starting from nothing is a flow just added: it reads its input from its
    starting position."""
    if table.flow is not None or storage.exists(f"{query_checkpoint(paths, table)}/metadata"):
        return
    for name in table.outputs:
        path = table.sink.path if isinstance(table.sink, DeltaPathSink) and name == table.name else paths.table(name)
        if delta_sql.is_delta_table(path) and not spark.read.format("delta").load(path).isEmpty():
            raise LakehouseError(
                f"{table.name}: its checkpoint is missing ({paths.checkpoint(table.name)}) but "
                f"{name} already holds rows, so a restart would duplicate data. Run a full refresh "
                f"(run config ops: {{{table.name}: {{config: {{full_refresh: true}}}}}}) to rebuild it."
            )
