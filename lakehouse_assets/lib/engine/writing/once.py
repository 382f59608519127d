"""A flow that runs once: Lakeflow's ``append_flow(once=True)``, a backfill into a table.

Its inputs are read as snapshots and its rows go through the table's micro-batch handler as one
batch (expectations, quarantine, the idempotent append: batch id 0 of the flow's own writer
identity), then a marker in the flow's checkpoint folder says it ran. A full refresh deletes the
folder, so the backfill runs again into the emptied table; a run killed before the marker was
written runs it again, and the append's transaction id keeps the rows from being written twice.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.reading.input_kinds import read_inputs
from lakehouse_assets.lib.engine.report import RunReport
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.engine.state.checkpoint import app_id, ensure_table, once_done_marker
from lakehouse_assets.lib.engine.state.checkpoint_guard import remember_progress
from lakehouse_assets.lib.engine.state.ledger import BatchLedger
from lakehouse_assets.lib.engine.writing.sink_kinds import sink_kind
from lakehouse_assets.lib.paths import LakehousePaths


def run_once(
    spark: SparkSession,
    paths: LakehousePaths,
    flow: TableSpec,
    report: RunReport,
    log: Callable[[str], None],
    run_id: str = "",
) -> None:
    """Append the flow's rows unless it ran already (its marker is in its checkpoint folder)."""
    marker = once_done_marker(paths, flow)
    if storage.exists(marker):
        log(f"{flow.name} (flow {flow.flow}): ran once already; a full refresh runs it again")
        return
    ledger = BatchLedger.for_run(paths.checkpoint(flow.checkpoint_name), run_id)
    prepare = sink_kind(flow.sink).prepare
    assert prepare is not None  # a once-flow writes into an append or merge table (declare/flows.py)
    prepared = prepare(spark, paths, flow, read_inputs(spark, paths, flow, log), ledger, app_id(paths, flow))
    if prepared.quarantine_schema is not None and flow.quarantine:
        ensure_table(spark, paths, flow.quarantine.table, prepared.quarantine_schema, flow, main=False)
    ensure_table(spark, paths, flow.name, prepared.output_schema, flow, main=True)
    before = report.expectation_rows
    try:
        prepared.handler(prepared.stream, 0)
    finally:
        ledger.add_up(report)
    rows = report.expectation_rows - before
    report.rows_read += rows
    report.batches += 1 if rows else 0
    log(f"{flow.name} (flow {flow.flow}): backfill of {rows} rows, once")
    storage.write_text(marker, "done\n")
    remember_progress(paths, flow)
