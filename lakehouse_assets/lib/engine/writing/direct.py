"""Tables whose rows go straight into Delta: Delta's own streaming sink, no ``foreachBatch``.

A plain append table (an append sink, no expectations, no quarantine) needs nothing of the
per-batch handler: no split, no second write. Its query then writes with Delta's streaming sink,
which is exactly once by itself (each commit carries the query's id and the batch id, so a
replayed batch is skipped) and runs wholly inside the engine. As a client of a Spark Connect
engine this saves the Python worker the engine starts for a ``foreachBatch`` query (~1.5 s on 2
cores) and the handler's round trips. The run's figures come from the query's progress (rows
read) and from the Delta commits the query made (rows written), so they add up as for any table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pyspark.sql import DataFrame

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.report import RunReport
from lakehouse_assets.lib.engine.state import delta_log, storage
from lakehouse_assets.lib.engine.state.checkpoint import uncommitted_batch
from lakehouse_assets.lib.engine.writing.query import await_query
from lakehouse_assets.lib.paths import LakehousePaths

Direct = Literal["never", "plain", "always"]
"""A sink kind's way to Delta's streaming sink: never; for a plain table (no expectations, no
quarantine, a Delta table under the root); always (a Delta table at a path of its own)."""


def writes_directly(paths: LakehousePaths, flow: TableSpec, way: Direct) -> bool:
    """The flow's rows go straight into Delta (see the module's docstring).

    :param paths: the data root.
    :param flow: the flow run.
    :param way: the sink kind's way (:data:`Direct`).

    The two ways make a write idempotent under different transaction ids (the query's id; the
    checkpoint's app id), so a micro-batch replayed after a crash is written the way it was
    first: the checkpoint's ``writer`` file says which way wrote its last batch. A crash test
    watching the handler's fault points takes the handler."""
    if way == "always":
        return True  # a Delta sink outside the root only writes this way (it has no expectations)
    marker = f"{paths.checkpoint(flow.checkpoint_name)}/writer"
    was_direct = (storage.read_text(marker) or "").strip() == "direct"
    eligible = way == "plain" and flow.writes_delta and not flow.expectations and flow.quarantine is None
    if not eligible and not was_direct:
        return False
    if uncommitted_batch(paths, flow):
        return was_direct and eligible  # replay the batch the way it was written
    direct = eligible and not faults.installed()
    if direct != was_direct:
        storage.write_text(marker, "direct" if direct else "handler")
    return direct


def run_direct(
    published: DataFrame,
    flow: TableSpec,
    path: str,
    checkpoint: str,
    report: RunReport,
    log: Callable[[str], None],
) -> None:
    """Drain everything new into the Delta table at ``path`` with Delta's streaming sink."""
    before = delta_log.delta_version(path)
    query = (
        published.writeStream.format("delta")
        .queryName(flow.name if flow.flow is None else f"{flow.name}:{flow.flow}")
        .outputMode(flow.output_mode)
        .trigger(availableNow=True)
        .option("checkpointLocation", checkpoint)
        .start(path)
    )
    await_query(query, flow, report, log)
    written = delta_log.streamed_rows(path, -1 if before is None else before, delta_log.delta_version(path))
    report.result_rows += written
    report.rows_written += written
