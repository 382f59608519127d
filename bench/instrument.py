"""Timers around the framework's pieces, for the per-table split of a run (framework code unchanged).

Used in-process by ``bench/dagster_run.py`` and, through ``bench/trace/sitecustomize.py``, inside a
real ``dagster asset materialize`` process (``LAKEHOUSE_BENCH_TRACE=<file>``): Spark session start,
each table's ``run_table`` with its queries' ``StreamingQueryProgress.durationMs``, the
materialization metadata, each asset check, and the step and run times from Dagster's event log.
"""

from __future__ import annotations

import atexit
import json
import threading
import time
from collections import defaultdict

import dagster as dg

import lakehouse_assets.lib.engine.query as query_module
import lakehouse_assets.lib.orchestrate.assets as lh_assets
import lakehouse_assets.lib.orchestrate.execution as execution
from lakehouse_assets.lib.spark.session import SparkResource

TIMES: dict = defaultdict(lambda: defaultdict(float))
PROGRESS: dict = defaultdict(list)
SPARK: dict = {}


def _timed(key: str, fn, name_of=None):
    def wrapper(*args, **kwargs):
        t = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            name = name_of(*args, **kwargs) if name_of else "run"
            TIMES[name][key] += time.monotonic() - t

    return wrapper


CHECK_SPANS: dict[str, list[float]] = {}  # table -> [first check's start, last check's end] of its step
_SPANS_LOCK = threading.Lock()


def _checks_wall(fn):
    """A step's checks run side by side: their time is the span from the first check's start to
    the last one's end, not the sum of their durations."""

    def wrapper(check, ctx):
        t = time.monotonic()
        try:
            return fn(check, ctx)
        finally:
            end = time.monotonic()
            with _SPANS_LOCK:
                span = CHECK_SPANS.get(ctx.table)
                if span is None:
                    CHECK_SPANS[ctx.table] = [t, end]
                    TIMES[ctx.table]["checks_s"] += end - t
                else:
                    before = span[1] - span[0]
                    span[0], span[1] = min(span[0], t), max(span[1], end)
                    TIMES[ctx.table]["checks_s"] += (span[1] - span[0]) - before

    return wrapper


def instrument() -> None:
    original_init = SparkResource._init_session

    def init_session(self):
        t = time.monotonic()
        try:
            return original_init(self)
        finally:
            SPARK["start_s"] = SPARK.get("start_s", 0.0) + time.monotonic() - t

    SparkResource._init_session = init_session
    # Metadata of the table and of its quarantine: attributed to the table whose step is running.
    current = {"table": "?"}
    timed_run = _timed("runner_s", execution.run_table, lambda spark, paths, table, *a, **k: table.name)

    def run_table(spark, paths, table, *args, **kwargs):
        current["table"] = table.name
        CHECK_SPANS.pop(table.name, None)  # a new step of this table
        return timed_run(spark, paths, table, *args, **kwargs)

    execution.run_table = run_table
    original_await = query_module.await_query

    def await_query(query, table, report, log):
        try:
            return original_await(query, table, report, log)
        finally:
            for p in query.recentProgress:
                PROGRESS[table.name].append(
                    {"batchId": p.batchId, "numInputRows": p.numInputRows, "durationMs": dict(p.durationMs)}
                )

    query_module.await_query = await_query
    execution.table_metadata = _timed("metadata_s", execution.table_metadata, lambda *a, **k: current["table"])
    execution.evaluate_check = _checks_wall(execution.evaluate_check)
    lh_assets._previous_metadata = _timed(  # noqa: SLF001
        "previous_state_s", lh_assets._previous_metadata, lambda instance, table: table.name  # noqa: SLF001
    )


def step_times(instance: dg.DagsterInstance, run_id: str) -> tuple[dict, float]:
    starts, steps = {}, {}
    run_start = run_end = None
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        kind = event.event_type_value
        if kind == dg.DagsterEventType.RUN_START.value:
            run_start = entry.timestamp
        elif kind in (dg.DagsterEventType.RUN_SUCCESS.value, dg.DagsterEventType.RUN_FAILURE.value):
            run_end = entry.timestamp
        elif kind == "STEP_START":
            starts[event.step_key] = entry.timestamp
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE") and event.step_key in starts:
            steps[event.step_key] = entry.timestamp - starts[event.step_key]
    return steps, (run_end - run_start) if run_start and run_end else 0.0


def install_for_cli(path: str, started: float) -> None:
    """Instrument this process and, when it exits, write its one run's timings to ``path`` in
    the form ``dagster_run.py`` prints (``started``: when the interpreter began)."""
    instrument()

    def dump() -> None:
        exited = time.time()
        instance = dg.DagsterInstance.get()
        run = instance.get_runs(limit=1)[0]
        steps, run_s = step_times(instance, run.run_id)
        stats = instance.get_run_stats(run.run_id)
        run_start = stats.start_time or started
        out = {
            "import_s": round(run_start - started, 3),
            "definitions_s": 0.0,
            "runs": [{
                "success": run.is_success, "wall_s": round(exited - run_start, 3), "run_s": round(run_s, 3),
                "spark_start_s": round(SPARK.get("start_s", 0.0), 3),
                "steps_s": {k: round(v, 3) for k, v in steps.items()},
                "tables": {k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in TIMES.items()},
                "progress": dict(PROGRESS), "metadata": {}, "state_bytes": {},
            }],
        }  # fmt: skip
        with open(path, "w") as handle:
            json.dump(out, handle, default=str)

    atexit.register(dump)
