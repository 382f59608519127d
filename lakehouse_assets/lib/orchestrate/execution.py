"""One table's materialization as a stream of plain events, on an embedded session or as a
client of a Spark Connect engine alike.

The Dagster asset turns these events into ``MaterializeResult`` / ``AssetCheckResult``; nothing
here knows about Dagster's context, so scripts and tests can run a table the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import dagster as dg
from pyspark.sql import SparkSession

from lakehouse_assets.lib import timings
from lakehouse_assets.lib.declare.checks import CheckOutcome, TableCheck
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.checks.check_context import CheckContext
from lakehouse_assets.lib.engine.checks.check_rules import evaluate
from lakehouse_assets.lib.engine.errors import engine_lost
from lakehouse_assets.lib.engine.report import RunReport
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.engine.state import delta_log, event_log
from lakehouse_assets.lib.engine.state.catalog import mark_registered, register_table, registered
from lakehouse_assets.lib.engine.state.run_events import table_run_events
from lakehouse_assets.lib.errors import LakehouseError, first_line
from lakehouse_assets.lib.orchestrate.metadata import last_change, quarantine_run_metadata, run_metadata, table_metadata
from lakehouse_assets.lib.orchestrate.retries import retrying
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.deferred import SessionNotStarted
from lakehouse_assets.lib.spark.session import EngineWatch

CHECK_THREADS = 4
# The metadata key of a check outcome that found nothing new to check.
NOTHING_NEW = "nothing_new_to_check"


@dataclass(frozen=True)
class Materialized:
    asset: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Checked:
    check: str
    outcome: CheckOutcome


TableEvent = Materialized | Checked


@dataclass(frozen=True)
class TableRequest:
    """What one step asks of a table: which outputs and checks, and what the last run recorded."""

    table: str
    assets: frozenset[str]
    checks: frozenset[str]
    full_refresh: bool = False
    # Metadata of each output's last materialization (empty on a full refresh or a first run).
    previous: dict[str, dict[str, Any]] | None = None
    # The last completed evaluation of each full-table check: {name: {"passed", "metadata"}}.
    previous_checks: dict[str, dict[str, Any]] | None = None
    # The last completed evaluations of the checks named, looked up only when needed (a check of
    # the changed rows after a run that changed nothing keeps its last outcome).
    earlier_checks: Callable[[frozenset[str]], dict[str, dict[str, Any]]] | None = None
    # Who writes (``run <id>``), named to another writer that has to wait for this one.
    writer: str = ""
    # The run, for the event log (empty: not a Dagster run).
    run_id: str = ""
    # Every declared table's name (None: not known).
    declared_tables: tuple[str, ...] | None = None


def _previous_state(
    previous: dict[str, dict[str, Any]], table: TableSpec
) -> tuple[dict[str, int], dict[str, str] | None]:
    """Delta versions and schema recorded by each output's last materialization."""
    versions = {name: int(m["delta_version"].value) for name, m in previous.items() if "delta_version" in m}
    own = previous.get(table.name, {})
    schema = (
        {c.name: c.type for c in own["dagster/column_schema"].value.columns} if "dagster/column_schema" in own else None
    )
    return versions, schema


def evaluate_check(check: TableCheck, ctx: CheckContext) -> CheckOutcome:
    """The check's outcome, with how long it took (``duration_s``); an error is a failed check."""
    started = time.monotonic()
    try:
        outcome = evaluate(check, ctx)
    except Exception as error:
        if engine_lost(error, current().spark_remote) or isinstance(error, SessionNotStarted):
            raise  # not the check's failure: the run's
        outcome = CheckOutcome(False, {"error": f"check could not run: {first_line(error)[:500]}"})
    return CheckOutcome(outcome.passed, {**outcome.metadata, "duration_s": round(time.monotonic() - started, 3)})


def _materializations(
    session: SparkSession,
    paths: LakehousePaths,
    table: TableSpec,
    request: TableRequest,
    log: Callable[[str], None],
    warn: Callable[[str], None],
    info: Callable[[str], None],
) -> tuple[RunReport, list[Materialized]]:
    """Run the table's query and describe each selected output (no event is yielded yet, so a
    transient fault anywhere in here can be retried whole)."""
    previous = request.previous or {}
    with timings.span("run_table", table.name):
        report = run_table(
            session,
            paths,
            table,
            full_refresh_first=request.full_refresh,
            log=log,
            notify=info,
            writer=request.writer,
            run_id=request.run_id,
        )
    _name_new_tables(session, paths, table, previous, warn)
    materialized = []
    own_path = table.sink.own_path()
    if table.name in request.assets and own_path is not None:
        version = dg.MetadataValue.int(delta_log.delta_version(own_path) or 0)
        sent = {"rows_appended": report.rows_written, "delta_version": version}
        materialized.append(Materialized(table.name, {**run_metadata(report), **sent}))
    elif table.name in request.assets and not table.writes_delta:
        materialized.append(Materialized(table.name, {**run_metadata(report), "messages_sent": report.rows_written}))
    elif table.name in request.assets:
        with timings.span("metadata", table.name):
            own = table_metadata(
                session, paths.table(table.name), previous.get(table.name), report.written.get(table.name)
            )
        kept = last_change(previous.get(table.name)) if report.changed_nothing else {}
        materialized.append(Materialized(table.name, {**run_metadata(report), **kept, **own}))
    if table.quarantine and table.quarantine.table in request.assets:
        name = table.quarantine.table
        with timings.span("metadata", table.name):
            content = table_metadata(session, paths.table(name), previous.get(name), report.written.get(name))
        materialized.append(Materialized(name, {**quarantine_run_metadata(report), **content}))
    return report, materialized


def _name_new_tables(
    session: SparkSession,
    paths: LakehousePaths,
    table: TableSpec,
    previous: dict[str, dict[str, Any]],
    warn: Callable[[str], None],
) -> None:
    """Register in the catalog each output under the data root that no earlier materialization
    recorded (a first run, a full refresh) and no run registered yet (:func:`registered`), so
    ``spark.table(name)`` finds it. A run whose outputs are all registered asks nothing of Spark."""
    for name in table.delta_outputs:
        if "delta_version" in previous.get(name, {}) or registered(paths, name):
            continue
        if delta_log.delta_version(paths.table(name)) is None:
            continue
        try:
            register_table(session, name, paths.table(name), warn)
            mark_registered(paths, name)
        except Exception as error:
            if engine_lost(error, current().spark_remote):
                raise
            warn(f"{name}: not registered in the catalog: {first_line(error)[:300]}")


def table_events(
    session: SparkSession,
    paths: LakehousePaths,
    table: TableSpec,
    request: TableRequest,
    log: Callable[[str], None],
    warn: Callable[[str], None] | None = None,
    info: Callable[[str], None] | None = None,
    renew: Callable[[], SparkSession] | None = None,
    watch: EngineWatch | None = None,
) -> Iterator[TableEvent]:
    """Run the table's query, then yield its materializations and check outcomes. ``log`` gets
    the progress lines (a line per micro-batch), ``info`` (default ``log``) the run's one-line
    summary, ``warn`` (default ``log``) what a human should look at although the run succeeded.
    A passing engine fault is retried (:func:`retrying`; ``renew`` gives the next try its session).

    On a :class:`LakehouseError` every selected check is reported failed with the cause, then
    the error is raised again for the caller to fail the step with its message."""
    checks = [c for c in table.all_checks if c.name in request.checks]
    previous = request.previous or {}
    versions, schema = _previous_state(previous, table)
    warn = warn or log
    try:
        session, (report, materialized) = retrying(
            table.name,
            lambda s: _materializations(s, paths, table, request, log, warn, info or log),
            session,
            warn,
            renew,
            watch=watch,
        )
    except LakehouseError as error:
        failed = [Checked(check.name, CheckOutcome(False, {"error": f"the run failed: {error}"})) for check in checks]
        _record_events(paths, table, request, None, [], failed, str(error))
        yield from failed
        raise
    (info or log)(report.summary())
    for warning in report.warnings:
        warn(warning)
    yield from materialized
    if not checks:
        _record_events(paths, table, request, report, materialized, [], None)
        return
    carried = {
        name: CheckOutcome(bool(c["passed"]), dict(c["metadata"]))
        for name, c in (request.previous_checks or {}).items()
    }

    def evaluate_all(on: SparkSession) -> list[CheckOutcome]:
        context = CheckContext(
            on,
            paths,
            table.name,
            report,
            versions,
            schema,
            carried,
            writer_keys=table.sink.unique_keys(),
            declared_tables=request.declared_tables,
        )
        # A check's Spark jobs are small and wait mostly on scheduling and round trips: side by
        # side the step waits for the slowest check, not for their sum.
        with (
            timings.span("checks", table.name),
            ThreadPoolExecutor(max_workers=CHECK_THREADS, thread_name_prefix=f"check-{table.name}") as pool,
        ):
            return list(pool.map(lambda c: evaluate_check(c, context), judged))

    def unmoved(check: TableCheck) -> bool:
        """The checked table is at the version its last materialization recorded (no commit
        since, not even one made outside the pipeline)."""
        name = table.quarantine.table if check.target == "quarantine" and table.quarantine else table.name
        return name in versions and delta_log.delta_version(paths.table(name)) == versions[name]

    # A run that read nothing, on a table nobody wrote since: a check of the changed rows has
    # nothing to look at.
    idle = {c.name for c in checks if c.scope == "changes" and report.changed_nothing and unmoved(c)}
    judged = [c for c in checks if c.name not in idle]
    if idle - carried.keys() and request.earlier_checks is not None:
        for name, c in request.earlier_checks(frozenset(idle - carried.keys())).items():
            carried[name] = CheckOutcome(bool(c["passed"]), dict(c["metadata"]))

    _, found = retrying(table.name, evaluate_all, session, warn, renew, again="its checks", watch=watch)
    outcomes = dict(zip([c.name for c in judged], found, strict=True))
    evaluated = [Checked(c.name, outcomes.get(c.name) or nothing_new(carried.get(c.name))) for c in checks]
    _record_events(paths, table, request, report, materialized, evaluated, None)
    yield from evaluated


def nothing_new(last: CheckOutcome | None) -> CheckOutcome:
    """The outcome of a check of the changed rows after a run that changed none: the last
    evaluation stands (passed when there is none), with no figures of its own."""
    return CheckOutcome(
        last.passed if last else True, {NOTHING_NEW: "the run read nothing; the last evaluation stands"}
    )


def _record_events(
    paths: LakehousePaths,
    table: TableSpec,
    request: TableRequest,
    report: RunReport | None,
    materialized: list[Materialized],
    evaluated: list[Checked],
    error: str | None,
) -> None:
    """Keep the run's figures and its check outcomes for the event log (:mod:`event_log`)."""
    version = next((m.metadata.get("delta_version") for m in materialized if m.asset == table.name), None)
    outcomes = [(c.check, c.outcome.passed, c.outcome.metadata) for c in evaluated]
    version = getattr(version, "value", version)
    event_log.record(paths, table_run_events(request.run_id, table.name, report, version, outcomes, error))
