"""Refusing to start from nothing what ran before: a checkpoint that is gone.

A query started from no checkpoint reads its inputs from the start, under a new writer identity
(:func:`~lakehouse_assets.lib.engine.state.checkpoint.app_id`, or a new query id for Delta's streaming
sink), so Delta's transaction ids do not recognise the replayed batches: every row is written
again. Two things tell a lost checkpoint from a new one:

- a **marker** kept outside the checkpoint's folder, under ``checkpoints/.started/``, recorded the
  first time the checkpoint planned a micro-batch (or a once-flow's backfill was done), and by
  the first run of this code over a checkpoint from before it. It covers every flow of a table
  (``append_flow``) and every sink (``to_kafka``, ``to_delta``): a flow declared since has no
  marker and starts, reading its inputs from their starting positions. A full refresh deletes
  the table's markers with its checkpoints.
- for the table's own flow, **rows** in its Delta output with no checkpoint (a root copied
  without ``checkpoints/``, or older than the markers).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import SparkSession

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.state import delta_sql, storage
from lakehouse_assets.lib.engine.state.checkpoint import once_done_marker, query_checkpoint, started_marker
from lakehouse_assets.lib.engine.writing.outputs import delta_output_paths
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths


def _made_progress(paths: LakehousePaths, flow: TableSpec) -> bool:
    """The checkpoint has planned a micro-batch (a once-flow: its backfill is done)."""
    if flow.once:
        return storage.exists(once_done_marker(paths, flow))
    return any(n.isdigit() for n in storage.list_names(f"{query_checkpoint(paths, flow)}/offsets"))


def remember_progress(paths: LakehousePaths, flow: TableSpec) -> None:
    """Record the flow's marker once its checkpoint has made progress (after its query ran).

    :param paths: the data root.
    :param flow: the flow that ran.
    """
    marker = started_marker(paths, flow)
    if not storage.exists(marker) and _made_progress(paths, flow):
        storage.write_text(marker, f"{datetime.now(UTC).isoformat(timespec='seconds')}\n")


def _present(paths: LakehousePaths, flow: TableSpec) -> bool:
    if flow.once:
        return storage.exists(once_done_marker(paths, flow))
    return storage.exists(f"{query_checkpoint(paths, flow)}/metadata")


def _refusal(flow: TableSpec, paths: LakehousePaths, evidence: str) -> LakehouseError:
    who = flow.name if flow.flow is None else f"{flow.name} (flow {flow.flow})"
    return LakehouseError(
        f"{who}: its checkpoint is missing ({paths.checkpoint(flow.checkpoint_name)}) but {evidence}, so "
        f"starting it from nothing would write its rows again; run a full refresh of {flow.name} (run config "
        f"ops: {{{flow.name}: {{config: {{full_refresh: true}}}}}}) to rebuild it."
    )


def guard_checkpoint(spark: SparkSession, paths: LakehousePaths, flow: TableSpec) -> None:
    """Refuse, in one sentence naming the full refresh, to start the flow from nothing when it
    ran before: its marker says so, or (the table's own flow) its Delta output holds rows. A
    checkpoint that is there but has no marker yet (from before the markers) gets one.

    :param spark: the session (to look at the output's rows).
    :param paths: the data root.
    :param flow: the table's own flow or one of its flows, about to run.
    """
    if _present(paths, flow):
        remember_progress(paths, flow)
        return
    marker = started_marker(paths, flow)
    if storage.exists(marker):
        raise _refusal(flow, paths, f"it ran before ({marker} records it)")
    if flow.flow is not None:
        return  # a flow declared since the table's last run: it starts from its inputs' beginning
    for name, path in delta_output_paths(paths, flow).items():
        if delta_sql.is_delta_table(path) and not spark.read.format("delta").load(path).isEmpty():
            raise _refusal(flow, paths, f"{name} already holds rows")
