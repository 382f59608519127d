"""Never two writers on one table: overlapping runs queue on the per-table pools.

Three ``dagster asset materialize --select '*gold_hourly_revenue'`` processes (the CLI path) start at once against
one instance and one data root: the repository's dagster.yaml with its storage in a temporary
folder (SQLite, one machine), or in a PostgreSQL database (what runs from several machines share). Each table's step claims the pool ``lakehouse/<table>`` (limit 1), so for every table the
steps of the three runs must not overlap in time, and the framework's OS lock must never have
had to wait (the pools did the serializing). Afterwards every table is exact.

On PostgreSQL the event log is the framework's (:mod:`lakehouse_assets.lib.accel.pool_slots`):
Dagster's own claim let two runs hold one slot there too (seen in CI: bronze_customers, 0.4 ms
apart), and test_pool_slots.py races the claim directly.

SQLite is the exception the framework leaves: its slot claim (``SELECT ... FOR UPDATE SKIP LOCKED``, then an
``UPDATE`` by id) locks nothing on SQLite, so two processes claiming one free slot in the same
millisecond can both get it (seen in CI: two steps started 1 ms apart). There the framework's OS
lock, taken around the table's query only, is what keeps the writers apart. Whether it had to wait
depends on timing: a step starts its session before the lock and runs its checks after it, so two
overlapping steps can take the lock one after the other without waiting (seen in CI too). On SQLite
overlapping steps are therefore accepted, and what must hold is the outcome: every table exact.
"""

from __future__ import annotations

import os
import re

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # Spark binds to 127.0.0.1 only

import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from devstack import REPO_ROOT
from devstack.dagster_dev import isolated_home
from devstack.postgres import postgres_home
from lakehouse_assets.definitions import TABLES
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.accel.pool_slots import PostgresEventLogStorage
from lakehouse_assets.lib.paths import LakehousePaths
from verification.runs import assert_events_exact, overlapping_steps, step_intervals

pytestmark = pytest.mark.slow

# gold_hourly_revenue and everything upstream of it ("*"; "+" would add one layer only)
SELECTION = "*gold_hourly_revenue"
LOCK_WAIT = re.compile(r"(\w+): another run is writing this table")


@pytest.mark.parametrize("storage", ["sqlite", "postgres"])
def test_overlapping_cli_runs_queue_on_table_pools(tmp_path: Path, spark, storage: str, request, monkeypatch) -> None:
    if storage == "postgres":
        database = request.getfixturevalue("postgres").create_database(f"concurrency_{tmp_path.name.lower()}")
        monkeypatch.setenv("DAGSTER_PG_URL", database)
        home = postgres_home(tmp_path / "home")
    else:
        home = isolated_home(tmp_path / "home")
    # Create the instance's SQLite schema once: three processes creating it at the same moment
    # race ("table secondary_indexes already exists").
    instance = dg.DagsterInstance.from_config(str(home))
    # Dagster creates a pool's slots on its first claim; two SQLite processes claiming a new pool
    # in the same instant can both create one (the OS lock then keeps the writers apart). A
    # deployment sets its pools once (`dagster instance concurrency set`), as here.
    for table in TABLES:
        instance.event_log_storage.set_concurrency_slots(f"lakehouse/{table.name}", 1)
    instance.dispose()
    root = tmp_path / "lakehouse"
    paths = LakehousePaths(str(root))
    generate(paths, GeneratorOptions(files=3, rows=300, seed=7), ["events"])
    env = {**os.environ, "DAGSTER_HOME": str(home), "LAKEHOUSE_ROOT": str(root), "SPARK_LOCAL_IP": "127.0.0.1"}
    dagster = Path(sys.executable).parent / "dagster"
    started = time.monotonic()
    procs = []
    for i in range(3):
        if i == 2:  # a third run joins while the first two are going, with new files landed
            time.sleep(5)
            generate(paths, GeneratorOptions(files=2, rows=300, seed=8), ["events"])
        log = open(tmp_path / f"run{i}.log", "wb")  # noqa: SIM115 - closed below once its run has ended
        procs.append(
            (
                subprocess.Popen(
                    [str(dagster), "asset", "materialize", "-m", "lakehouse_assets.definitions", "--select", SELECTION],
                    cwd=REPO_ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                ),
                log,
            )
        )
    try:
        for proc, log in procs:
            proc.wait(900)
            log.close()
    finally:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
    elapsed = time.monotonic() - started
    logs = [(tmp_path / f"run{i}.log").read_text(errors="replace") for i in range(3)]
    for (proc, _), text in zip(procs, logs, strict=True):
        assert proc.returncode == 0, text[-3000:]

    instance = dg.DagsterInstance.from_config(str(home))
    try:
        assert type(instance.run_storage).__name__ == (
            "PostgresRunStorage" if storage == "postgres" else "SqliteRunStorage"
        )
        if storage == "postgres":
            assert type(instance.event_log_storage) is PostgresEventLogStorage
        runs = instance.get_runs()
        assert len(runs) == 3 and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        intervals = step_intervals(instance, [r.run_id for r in runs])
        assert {"bronze_events", "silver_events", "gold_hourly_revenue"} <= set(intervals)
        assert all(len(spans) == 3 for spans in intervals.values())
        overlaps = overlapping_steps(intervals)
        lock_waits = {table for text in logs for table in LOCK_WAIT.findall(text)}
        if storage == "postgres":
            assert not overlaps, overlaps
        # the runs really did overlap in time: they queued on the pools, not one after the other
        run_spans = sorted((min(s for sp in intervals.values() for s, _, r in sp if r == run.run_id),
                            max(e for sp in intervals.values() for _, e, r in sp if r == run.run_id))
                           for run in runs)  # fmt: skip
        assert run_spans[1][0] < run_spans[0][1], "the runs did not overlap; nothing was tested"
        # pools serialized the writers: the framework's OS lock never had to wait (but see SQLite above)
        assert lock_waits <= {o.split(":")[0] for o in overlaps}, (lock_waits, overlaps)
        print(f"3 overlapping CLI runs in {elapsed:.0f}s; step spans: {dict(intervals)}")
    finally:
        instance.dispose()
    assert_events_exact(spark, root)
