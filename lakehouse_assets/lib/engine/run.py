"""One run of a streaming table, start to end: the writer lock, a full refresh when asked, the
missing-checkpoint guard of every flow (before any of them writes), then for the table's own
flow and each ``append_flow``: the idle skip and the ``availableNow`` query of the table's write
strategy (per micro-batch, or recompute); an overwrite table recomputes whole instead, with no
query."""

from __future__ import annotations

import time
from collections.abc import Callable

from pyspark.sql import SparkSession

from lakehouse_assets.lib.declare.inputs import LandingInput, inputs_of_kind
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.freshness import forget_held, record_held, upstream_held
from lakehouse_assets.lib.engine.intake.lifecycle import admit, drained, finish, note_read_failure, take_all_back
from lakehouse_assets.lib.engine.locking.writer_lock import writer_lock
from lakehouse_assets.lib.engine.reading.idle import idle_input
from lakehouse_assets.lib.engine.reading.input_kinds import read_inputs
from lakehouse_assets.lib.engine.reading.kafka_input import FlowSkipped, check_kafka_inputs, kafka_servers
from lakehouse_assets.lib.engine.reading.waiting import waiting_changes
from lakehouse_assets.lib.engine.report import RunReport
from lakehouse_assets.lib.engine.schema.landing_schema import evolve_schema
from lakehouse_assets.lib.engine.state.checkpoint import app_id, ensure_table, full_refresh, query_checkpoint
from lakehouse_assets.lib.engine.state.checkpoint_guard import guard_checkpoint, remember_progress
from lakehouse_assets.lib.engine.state.event_log import record_killed_runs
from lakehouse_assets.lib.engine.state.ledger import BatchLedger
from lakehouse_assets.lib.engine.writing.batch import publisher
from lakehouse_assets.lib.engine.writing.direct import run_direct, writes_directly
from lakehouse_assets.lib.engine.writing.once import run_once
from lakehouse_assets.lib.engine.writing.overwrite import run_overwrite
from lakehouse_assets.lib.engine.writing.query import run_query
from lakehouse_assets.lib.engine.writing.sink_kinds import sink_kind
from lakehouse_assets.lib.errors import LakehouseError, LandedFileUnreadable, UnexaminedFile
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.spark.deferred import running_with
from lakehouse_assets.lib.spark.session import session_settings

Log = Callable[[str], None]
UNEXAMINED_ATTEMPTS = 3
# A query that keeps failing on one landed file after another gives up after this many tries.
MAX_QUERY_ATTEMPTS = 20


def run_table(
    spark: SparkSession,
    paths: LakehousePaths,
    table: TableSpec,
    *,
    full_refresh_first: bool = False,
    log: Log | None = None,
    notify: Log | None = None,
    writer: str = "",
    run_id: str = "",
) -> RunReport:
    """Run the table's query over everything new in its inputs; what it did.

    :param spark: the session to run on.
    :param paths: the data root.
    :param table: the declared table.
    :param full_refresh_first: reset the checkpoint and empty the outputs first.
    :param log: where progress lines go.
    :param notify: where lines a person should see go (waiting for another writer); default ``log``.
    :param writer: who runs it (a Dagster run), named to another writer that waits for this one.
    :param run_id: the run, kept with its micro-batches' figures: if it is killed, the next run
        records in the event log what it had committed (:func:`record_killed_runs`).
    """
    say: Log = log or (lambda message: None)
    tell: Log = notify or say

    def waiting(seconds: float | None = None, holder: str | None = None) -> None:
        if seconds is None:
            tell(
                f"{table.name}: another run is writing this table; waiting for it" + (f" ({holder})" if holder else "")
            )
        else:
            tell(f"{table.name}: waited {seconds:.1f}s for the other writer")

    with writer_lock(paths).hold(table.name, waiting, writer), running_with(spark):
        upstream = upstream_held(paths, table)
        if full_refresh_first:
            forget_held(paths, table)
            take_all_back(paths, table, say)
            full_refresh(spark, paths, table, say)
        report = _run(spark, paths, table, say, run_id)
        record_held(paths, table, upstream)
        report.full_refresh = full_refresh_first
        return report


def _run(spark: SparkSession, paths: LakehousePaths, table: TableSpec, log: Log, run_id: str) -> RunReport:
    started = time.monotonic()
    report = RunReport(table.name)
    flows = table.flow_runs()
    for flow in flows:
        # Every flow's checkpoint first: a lost one stops the run before any flow writes.
        if sink_kind(flow.sink).write_whole is None and not _unconfigured_kafka(flow):
            guard_checkpoint(spark, paths, flow)
    for flow in flows:
        with session_settings(spark, flow.spark_conf, owner=flow.checkpoint_name):
            record_killed_runs(paths, flow)
            _run_with_retries(spark, paths, flow, report, log, run_id)
            report.warnings = list(dict.fromkeys(report.warnings))  # once, whatever the attempts
    report.duration_s = round(time.monotonic() - started, 3)
    return report


def _run_with_retries(
    spark: SparkSession, paths: LakehousePaths, flow: TableSpec, report: RunReport, log: Log, run_id: str
) -> None:
    """Run the flow; again when a CSV file landed after its header was read (its micro-batch
    failed whole; the next attempt reads its header first), and when reading a landed file
    failed (counted against the file, which is set aside once it has failed too often)."""
    unexamined = 0
    for _ in range(MAX_QUERY_ATTEMPTS):
        try:
            _run_flow(spark, paths, flow, report, log, run_id)
            return
        except UnexaminedFile as error:
            unexamined += 1
            if unexamined == UNEXAMINED_ATTEMPTS:
                raise
            log(f"{error}; running the query again")
        except LandedFileUnreadable as error:
            if not note_read_failure(paths, flow, error.file, str(error), report.warnings.append):
                raise
            log(f"{error}; running the query again")
    _run_flow(spark, paths, flow, report, log, run_id)


def _unconfigured_kafka(flow: TableSpec) -> list[str]:
    """The Kafka inputs, and sink, of a further flow or a sink that have no broker to go to
    (the flow is skipped); a Delta table's own flow is never skipped."""
    if flow.flow is None and flow.writes_delta:
        return []
    missing = [i.described for i in flow.kafka_inputs if not kafka_servers(i)]
    sink = sink_kind(flow.sink).unconfigured(flow.sink)
    return missing + ([sink] if sink else [])


def _run_flow(
    spark: SparkSession, paths: LakehousePaths, flow: TableSpec, report: RunReport, log: Log, run_id: str
) -> None:
    name = flow.name if flow.flow is None else f"{flow.name} (flow {flow.flow})"
    unconfigured = _unconfigured_kafka(flow)
    if unconfigured:
        waiting = waiting_changes(paths, flow)
        report.changes_waiting = waiting.changes if waiting else None
        # A warning, not a progress line: the asset would otherwise look sent (docs/kafka.md).
        report.warnings.append(
            f"{name}: nothing sent or read: it uses Kafka ({', '.join(unconfigured)}) and no broker is configured "
            "(LAKEHOUSE_KAFKA_BOOTSTRAP); what it has not read waits in its checkpoint for the first run with one"
            + (f" ({waiting.described()})" if waiting else "")
        )
        return
    kind = sink_kind(flow.sink)
    if kind.write_whole is not None:
        run_overwrite(spark, paths, flow, report, log, kind.write_whole)
        return
    if flow.once:
        run_once(spark, paths, flow, report, log, run_id)
        return
    intakes = admit(spark, paths, flow, report, log)
    try:
        idle = idle_input(spark, paths, flow, drained(intakes)) or check_kafka_inputs(paths, flow, log)
    except FlowSkipped as skipped:
        report.warnings.append(str(skipped))
        return
    if idle:
        # Starting the query would only read the checkpoint and find nothing new.
        log(f"{name}: nothing new in {idle} since the last run; query not started")
        report.skipped.append(f"nothing new in {idle} since the last run, query not started")
        return
    for param, source in inputs_of_kind(flow.inputs, LandingInput).items():
        if source.infers_schema:
            report.schema_changes += evolve_schema(spark, paths, flow, param, source, log, report.warnings.append)
    if kind.resolve is not None:
        flow = kind.resolve(flow)  # e.g. a Kafka sink's brokers: only a query that will send needs them now
    if writes_directly(paths, flow, kind.direct):
        stream = flow.transform(**read_inputs(spark, paths, flow, log))
        published = publisher(flow, stream)(stream)
        own_path = flow.sink.own_path()
        if own_path is not None:
            path = own_path  # a sink: the first write creates it
        else:
            path = paths.table(flow.name)
            report.schema_changes += ensure_table(spark, paths, flow.name, published.schema, flow, main=True)
        try:
            run_direct(published, flow, path, query_checkpoint(paths, flow), report, log)
        finally:
            remember_progress(paths, flow)
        finish(spark, paths, flow, intakes)
        return
    if kind.prepare is None:
        raise LakehouseError(f"{name}: a {flow.sink.kind} sink writes only through Delta's streaming sink")
    if kind.refresh:
        report.refresh = kind.refresh
    inputs = read_inputs(spark, paths, flow, log)
    ledger = BatchLedger.for_run(paths.checkpoint(flow.checkpoint_name), run_id)
    prepared = kind.prepare(spark, paths, flow, inputs, ledger, app_id(paths, flow))
    kind.check_rows(flow, prepared.output_schema)
    if prepared.quarantine_schema is not None and flow.quarantine:
        report.schema_changes += ensure_table(
            spark, paths, flow.quarantine.table, prepared.quarantine_schema, flow, main=False
        )
    if flow.writes_delta:
        report.schema_changes += ensure_table(spark, paths, flow.name, prepared.output_schema, flow, main=True)
    try:
        run_query(prepared.stream, flow, prepared.handler, query_checkpoint(paths, flow), report, log)
    finally:
        ledger.add_up(report)
        remember_progress(paths, flow)
    finish(spark, paths, flow, intakes)
