"""The per-table split of a run, from the spans the framework reports (``lakehouse_assets.lib.timings``).

Used in-process by ``bench/dagster_run.py`` and, through ``bench/trace/sitecustomize.py``, inside a
real ``dagster asset materialize`` process (``LAKEHOUSE_BENCH_TRACE=<file>``): Spark session start,
each table's ``run_table`` with its queries' ``StreamingQueryProgress.durationMs``, the
materialization metadata, each asset check, and the step and run times from Dagster's event log.
"""

from __future__ import annotations

import atexit
import json
import time
from collections import defaultdict

import dagster as dg

from lakehouse_assets.lib import timings

TIMES: dict = defaultdict(lambda: defaultdict(float))
PROGRESS: dict = defaultdict(list)
SPARK: dict = {}


PHASE_KEYS = {
    "run_table": "runner_s",
    "metadata": "metadata_s",
    "checks": "checks_s",
    "previous_state": "previous_state_s",
}
_remove_listener = None


def _collect(span: timings.Span) -> None:
    if span.phase == "session_start":
        SPARK["start_s"] = SPARK.get("start_s", 0.0) + span.seconds
    elif span.phase == "query":
        PROGRESS[span.table].extend(span.details.get("progress", []))
    elif span.phase in PHASE_KEYS:
        TIMES[span.table][PHASE_KEYS[span.phase]] += span.seconds


def instrument() -> None:
    """Collect this process's spans (once, however often called)."""
    global _remove_listener
    if _remove_listener is None:
        _remove_listener = timings.add_listener(_collect)


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
