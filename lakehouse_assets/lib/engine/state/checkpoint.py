"""A table's checkpoint and outputs: the writer identity, the markers of progress kept outside
the checkpoint (read by :mod:`~lakehouse_assets.lib.engine.state.checkpoint_guard`), table creation
and full refresh."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.state import delta_sql, storage
from lakehouse_assets.lib.engine.writing.outputs import delta_output_paths
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths


def query_checkpoint(paths: LakehousePaths, table: TableSpec) -> str:
    return f"{paths.checkpoint(table.checkpoint_name)}/query"


def once_done_marker(paths: LakehousePaths, flow: TableSpec) -> str:
    """The file in a once-flow's checkpoint folder that says its backfill is done."""
    return f"{paths.checkpoint(flow.checkpoint_name)}/once-done"


STARTED_FOLDER = ".started"


def started_marker(paths: LakehousePaths, flow: TableSpec) -> str:
    """The file saying the flow's checkpoint has made progress: under ``checkpoints/.started/``,
    outside the checkpoint's own folder, so it outlives that folder.

    :param paths: the data root.
    :param flow: the table's own flow or one of its flows (:meth:`TableSpec.flow_runs`).
    """
    return f"{paths.checkpoint(STARTED_FOLDER)}/{flow.checkpoint_name}/started"


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
    """Forget the checkpoints (the table's and its flows', and their markers) and empty the
    outputs; keeping the tables' identity lets downstream change-feed readers see the rebuild as
    deletes and inserts. The markers go first: a refresh cut off after them leaves checkpoints
    that are still there, and the next run records their markers again."""
    log(f"{table.name}: full refresh: resetting checkpoint and emptying {table.outputs}")
    storage.delete(f"{paths.checkpoint(STARTED_FOLDER)}/{table.name}")
    storage.delete(paths.checkpoint(table.name))
    for path in delta_output_paths(paths, table).values():
        if delta_sql.is_delta_table(path):
            delta_sql.delete_all_rows(spark, path)
