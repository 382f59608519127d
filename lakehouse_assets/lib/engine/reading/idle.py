"""Deciding whether a run has work: a query over one Delta table whose checkpoint already points
past the table's latest version, or over one landing folder where the intake found nothing new since the last query that read
everything, would only read its checkpoint and find nothing. Starting it
costs a Python worker on a Connect engine (about 1.5 s); these answers cost a few file reads."""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from lakehouse_assets.lib.declare.inputs import LandingInput, inputs_of_kind
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.reading.idle_folder import idle_file_stream
from lakehouse_assets.lib.engine.state import delta_log, delta_sql, storage
from lakehouse_assets.lib.engine.state.checkpoint import query_checkpoint
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current


def idle_stream_input(offsets: list[str], committed: bool, latest_version: int | None, table_id: str | None) -> bool:
    """Whether a checkpointed query over one Delta table (stream or change feed) has nothing to
    read: its last batch committed, its offset points past the table's latest version
    (``reservoirVersion`` V with ``index`` -1 means "next read starts at version V"), and the
    table is the one the checkpoint read. Anything unexpected answers False: run the query."""
    if not committed or latest_version is None or table_id is None or len(offsets) != 3:
        return False
    try:
        offset = json.loads(offsets[2])
    except ValueError:
        return False
    return (
        isinstance(offset, dict)
        and offset.get("reservoirId") == table_id
        and offset.get("index") == -1
        and offset.get("isStartingVersion") is False
        and isinstance(offset.get("reservoirVersion"), int)
        and latest_version < offset["reservoirVersion"]
    )


def _last_batch_committed(query: str) -> bool:
    ids = [int(n) for n in storage.list_names(f"{query}/offsets") if n.isdigit()]
    return bool(ids) and storage.exists(f"{query}/commits/{max(ids)}")


def _outputs_exist(paths: LakehousePaths, table: TableSpec) -> bool:
    # From the logs, not through Delta: in a cold JVM Delta's first use of a table costs seconds.
    return all(delta_log.delta_version(paths.table(name)) is not None for name in table.delta_outputs)


def idle_landing(paths: LakehousePaths, table: TableSpec, source: LandingInput, drained: bool) -> str | None:
    """``landing/<source>`` when the intake found nothing new there since the last query that
    read everything (``drained``), the last batch committed and the outputs exist; else None.
    Inputs with reader options of their own (recursive lookup, archiving) always run."""
    query = query_checkpoint(paths, table)
    if not drained or source.options or not _last_batch_committed(query) or not _outputs_exist(paths, table):
        return None
    return source.described


def streams_as_declared(table: TableSpec) -> bool:
    """Whether the function still streams the folders the table declares: a transform that can
    say which it streams now (``streamed_folders()``, a pipeline's query) is asked, since its
    code may compute a path the definitions, loaded long ago, do not know."""
    now = getattr(table.transform, "streamed_folders", None)
    if now is None:
        return False
    try:
        return bool(now() == table.file_streams)
    except Exception:  # noqa: BLE001 - the user's code, planned again: any failure means run the query
        return False


def _idle_own_folder(paths: LakehousePaths, table: TableSpec) -> str | None:
    """The folder the table's function streams itself, when its query would find nothing new."""
    query = query_checkpoint(paths, table)
    if table.streaming_inputs or len(table.file_streams) != 1:
        return None
    if not _last_batch_committed(query) or not _outputs_exist(paths, table) or not streams_as_declared(table):
        return None
    return idle_file_stream(query, table.file_streams[0])


def idle_input(spark: SparkSession, paths: LakehousePaths, table: TableSpec, drained: bool = False) -> str | None:
    """The input of a table whose query would find nothing new, else None. Only for tables
    that read exactly one Delta table, one landing folder or one folder their function streams
    itself (plus any static inputs), keep no state, and whose outputs exist; everything else
    always runs its query.

    :param drained: the intake found nothing new in the table's landing folders since the last
        query that read everything (:func:`lakehouse_assets.lib.engine.intake.lifecycle.drained`).
    """
    if not current().skip_idle_queries or table.is_stateful:
        return None
    if table.file_streams:
        return _idle_own_folder(paths, table)
    streaming = table.streaming_inputs
    landed = list(inputs_of_kind(table.inputs, LandingInput).values())
    if len(streaming) == 1 and len(landed) == 1 and landed[0].streaming:
        return idle_landing(paths, table, landed[0], drained)
    if landed:
        return None
    streams = [i.upstream_table for i in streaming.values() if i.upstream_table]
    if len(streams) != 1 or len(streaming) != 1:
        return None
    query = query_checkpoint(paths, table)
    ids = [int(n) for n in storage.list_names(f"{query}/offsets") if n.isdigit()]
    if not ids:
        return None
    last = max(ids)
    committed = storage.exists(f"{query}/commits/{last}")
    source = paths.table(streams[0])
    latest = delta_log.delta_version(source)
    if not committed or latest is None or not _outputs_exist(paths, table):
        return None
    table_id = delta_log.delta_table_id(source) or delta_sql.table_id(spark, source)
    offsets = (storage.read_text(f"{query}/offsets/{last}") or "").strip().splitlines()
    return streams[0] if idle_stream_input(offsets, committed, latest, table_id) else None
