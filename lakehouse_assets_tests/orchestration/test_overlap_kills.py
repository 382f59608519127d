"""Runs that overlap by table, killed mid-flight: every file still reaches gold exactly once.

As ``make dev`` runs it (``dagster dev``, every run a client of a Spark Connect engine). A file
lands; once its run has committed ``bronze_events`` and is still busy with the tables after it, a
second file lands and the landing sensor starts a second run at once (runs overlap by table).
Then each run's process is killed (SIGKILL, as the kernel's OOM killer would): the first while
the second is going, the second once it has committed its bronze. Nobody lands anything more or
touches the instance: Dagster's run retries and the sensor's stranded-file rule must finish the
work, no two runs may write one table at the same time, and the events chain must equal what the
files say, computed by the test from the files themselves.
"""

from __future__ import annotations

import os

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # Spark binds to 127.0.0.1 only

import signal
import socket
from pathlib import Path

import dagster as dg
import pytest

from devstack.dagster_dev import DagsterDev, delta_versions, isolated_home
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.accel.warm_runs import PID_TAG
from lakehouse_assets.lib.paths import LakehousePaths
from verification.runs import assert_events_exact, overlapping_steps, step_intervals, wait_for

pytestmark = pytest.mark.slow

ENV = {"SPARK_LOCAL_IP": "127.0.0.1", "LAKEHOUSE_SENSOR_INTERVAL_SECONDS": "1"}


def _land(paths: LakehousePaths, seed: int) -> None:
    generate(paths, GeneratorOptions(files=1, rows=300, late=0.0, gzip=0.0, seed=seed), ["events"])


def _going(dev: DagsterDev) -> list[dict]:
    return [r for r in dev.runs(["STARTED"]) if r["jobName"] == "ingest_events"]


def _kill(home: Path, run: dict) -> None:
    """SIGKILL the run's own process (the pid the warm launcher tagged it with: a hidden tag,
    read from the instance, not the GraphQL API)."""
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        record = instance.get_run_by_id(run["runId"])
        assert record is not None
        tag = record.tags[PID_TAG]
    finally:
        instance.dispose()
    host, pid, _ = tag.split(":")
    assert host == socket.gethostname(), tag
    os.kill(int(pid), signal.SIGKILL)


def test_overlapping_runs_killed_mid_flight_end_exact(tmp_path: Path, spark) -> None:
    home = isolated_home(tmp_path / "home")
    root = tmp_path / "lakehouse"
    paths = LakehousePaths(str(root))
    bronze = paths.local_path(paths.table("bronze_events"))
    with DagsterDev(root=root, home=home, env=ENV, engine=True) as dev:
        _land(paths, seed=31)
        wait_for(lambda: _going(dev), 300, "the first file's run to start")
        wait_for(lambda: delta_versions(bronze), 600, "the first run's bronze commit")
        (first,) = _going(dev)
        committed = len(delta_versions(bronze))
        _land(paths, seed=32)  # the first run is past reading the folder: a second run starts now
        wait_for(lambda: any(r["runId"] != first["runId"] for r in _going(dev)), 120, "a second, overlapping run")
        second = next(r for r in _going(dev) if r["runId"] != first["runId"])
        first_still_going = any(r["runId"] == first["runId"] for r in _going(dev))
        _kill(home, first)
        wait_for(lambda: len(delta_versions(bronze)) > committed, 300, "the second run's bronze commit")
        killed = [first["runId"]]
        if any(r["runId"] == second["runId"] for r in _going(dev)):
            _kill(home, second)
            killed.append(second["runId"])
        dev.wait_idle(900, quiet=20)
        runs = dev.runs()
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        clashes = overlapping_steps(step_intervals(instance, [r["runId"] for r in runs]))
    finally:
        instance.dispose()
    assert first_still_going, "the first run had ended before the second started: nothing overlapped"
    assert not clashes, clashes
    by_id = {r["runId"]: r for r in runs}
    assert all(by_id[run_id]["status"] == "FAILURE" for run_id in killed), [by_id[i] for i in killed]
    # Each killed run's work was made good by a later run that succeeded (a retry or the sensor's).
    assert sum(r["status"] == "SUCCESS" for r in runs) >= 1 and runs[0]["status"] == "SUCCESS", runs[0]
    assert_events_exact(spark, root)
    print(f"{len(runs)} runs: " + ", ".join(f"{r['runId'][:8]} {r['jobName']} {r['status']}" for r in runs))
