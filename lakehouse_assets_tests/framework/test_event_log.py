"""The event log: a run killed after committing one micro-batch of three, then the retry. The
log, read back through ``python -m lakehouse_assets.sql`` (its own session) and through this
process's session, holds the killed run's committed batch and the retry's figures, each once,
equal to what the files hold (counted here) and to what the retry's materialization recorded;
recording the same events again and syncing again changes nothing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.lib.engine.state import event_log
from lakehouse_assets.lib.engine.state.run_events import from_json
from lakehouse_assets.lib.paths import LakehousePaths
from verification.crash import REPO, materialize_in_child

pytestmark = [pytest.mark.slow, pytest.mark.gate]
LOCATION = ("-m", "lakehouse_assets_tests.framework.event_log_definitions")


def land(folder: Path, n: int, readings: int) -> dict[str, int]:
    """File ``n``: ``readings`` good lines, one without kWh, one not JSON (both fail
    ``kwh_present``); what it holds."""
    lines = [json.dumps({"reading_id": f"{n}-{i}", "meter": "m1", "kwh": i}) for i in range(readings)]
    lines += [json.dumps({"reading_id": f"{n}-x", "meter": "m1"}), "not json"]
    path = folder / f"f{n}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))  # the order the micro-batches take them
    return {"written": readings, "dropped": 1, "quarantined": 1}


def sql(root: Path, statement: str) -> str:
    env = {**os.environ, "LAKEHOUSE_ROOT": str(root), "COLUMNS": "200"}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run(
        [sys.executable, "-m", "lakehouse_assets.sql", statement],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_killed_run_and_its_retry_are_each_counted_once(tmp_path: Path, spark) -> None:
    root = tmp_path / "lakehouse"
    folder = root / "landing" / "readings"
    folder.mkdir(parents=True)
    files = [land(folder, n, readings) for n, readings in enumerate((3, 5, 7))]

    killed = materialize_in_child(tmp_path, "*", fault="readings:after_batch_writes#2", location=LOCATION)
    assert killed.killed, f"the fault did not fire:\n{killed.output[-3000:]}"
    retry = materialize_in_child(tmp_path, "*", location=LOCATION)
    assert retry.returncode == 0, retry.output[-3000:]

    instance = dg.DagsterInstance.from_config(str(tmp_path / "dagster_home"))
    runs = instance.get_run_records()
    retry_run = next(r.dagster_run.run_id for r in runs if r.dagster_run.status == dg.DagsterRunStatus.SUCCESS)
    killed_run = next(r.dagster_run.run_id for r in runs if r.dagster_run.run_id != retry_run)
    recorded = instance.get_latest_materialization_event(dg.AssetKey("readings"))
    assert recorded is not None and recorded.asset_materialization is not None
    shown = {k: v.value for k, v in recorded.asset_materialization.metadata.items()}

    # Through the command line (a session of its own, which syncs the pending events first):
    # what a user asks of it, the rows each expectation failed per day.
    paths = LakehousePaths(str(root))
    assert event_log.pending(paths), "the runs recorded no event"
    daily = sql(
        root,
        "SELECT date(timestamp) AS day, sum(expectation_failures['kwh_present']) AS failed, "
        "count_if(event_type = 'killed_run') AS killed FROM _lakehouse_events WHERE table_name = 'readings' GROUP BY 1",
    )
    day_rows = [line for line in daily.splitlines() if re.match(r"^\W*\d{4}-\d\d-\d\d", line)]
    assert len(day_rows) == 1 and re.findall(r"\d+", day_rows[0])[-2:] == ["6", "1"], daily
    assert event_log.pending(paths) == []
    spark.catalog.clearCache()
    events = spark.read.format("delta").load(event_log.event_log_path(paths))
    rows = [r.asDict() for r in events.where("table_name = 'readings' AND event_type <> 'check'").collect()]
    by_type = {r["event_type"]: r for r in rows}
    assert sorted(r["event_type"] for r in rows) == ["killed_run", "run"], rows

    # The killed run had committed the first file's micro-batch only; the retry took the rest.
    assert by_type["killed_run"]["run_id"] == killed_run
    assert (by_type["killed_run"]["batches"], by_type["killed_run"]["rows_written"]) == (1, files[0]["written"])
    assert by_type["killed_run"]["rows_quarantined"] == files[0]["quarantined"]
    run = by_type["run"]
    assert run["run_id"] == retry_run and run["status"] == "succeeded"
    assert run["rows_written"] == sum(f["written"] for f in files[1:]) == shown["rows_written"]
    assert run["rows_read"] == shown["rows_read"] and run["batches"] == shown["micro_batches"] == 2
    assert run["rows_quarantined"] == shown["rows_quarantined"] and run["rows_dropped"] == shown["rows_dropped"]
    assert run["expectation_failures"]["kwh_present"] == shown["expectation/kwh_present/failed"] == 4
    assert run["delta_version"] == shown["delta_version"]
    # No batch counted twice: the log adds up to the table.
    table = spark.read.format("delta").load(str(root / "tables" / "readings")).count()
    assert sum(r["rows_written"] for r in rows) == table == sum(f["written"] for f in files)
    checks = events.where("event_type = 'check'").collect()
    evaluated = [
        e.dagster_event.event_specific_data
        for e in instance.all_logs(retry_run, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        if e.dagster_event is not None
    ]
    assert len(evaluated) >= 2
    assert sorted((r["run_id"], r["check_name"], r["passed"]) for r in checks) == sorted(
        (retry_run, e.check_name, e.passed) for e in evaluated
    )

    # The same events recorded again (a step tried again) and synced again: no new row.
    again = [from_json(json.dumps({**r, "timestamp": r["timestamp"].isoformat()})) for r in rows]
    event_log.record(paths, again)
    assert event_log.sync(spark, paths) == 0
    assert event_log.sync(spark, paths) == 0
    assert spark.read.format("delta").load(event_log.event_log_path(paths)).count() == len(rows) + len(checks)
