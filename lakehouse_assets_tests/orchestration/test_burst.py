"""A burst under ``dagster dev`` with the engine going away: every table exact, nobody touching it.

As ``make dev`` runs it: ``dagster dev`` with the repository's dagster.yaml, every run a client of
a Spark Connect engine started beside it. A file lands in each of the four sources at once; once
the sensors' runs are going, the engine's server is killed (SIGKILL of its process group) and
started again on the same port a few seconds later, as a service manager would. The runs in
flight meet the dead engine, retry (a new Connect session each try, with back-off) or fail and
are run again, and when the instance is idle again every table holds exactly what the files say.
"""

from __future__ import annotations

import os

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # Spark binds to 127.0.0.1 only

import time
from pathlib import Path

import dagster as dg
import pytest

from devstack.dagster_dev import TRIED_AGAIN, DagsterDev, delta_versions, isolated_home
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.paths import LakehousePaths
from verification.contract import assert_every_source_exact
from verification.lakehouse import Lakehouse
from verification.runs import wait_for

pytestmark = pytest.mark.slow

ENV = {"SPARK_LOCAL_IP": "127.0.0.1", "LAKEHOUSE_SENSOR_INTERVAL_SECONDS": "5"}
BRONZE = ["bronze_events", "bronze_customers", "bronze_ad_impressions", "bronze_ad_clicks"]


def test_a_burst_into_every_source_survives_an_engine_restart_without_any_launch(tmp_path: Path, spark) -> None:
    home = isolated_home(tmp_path / "home")
    root = tmp_path / "lakehouse"
    paths = LakehousePaths(str(root))
    bronze = [paths.local_path(paths.table(name)) for name in BRONZE]
    with DagsterDev(root=root, home=home, env=ENV, engine=True) as dev:
        assert dev.engine is not None
        generate(paths, GeneratorOptions(files=1, rows=300, seed=21), None)  # all four sources at once
        wait_for(lambda: dev.runs(["STARTED"], limit=1), 300, "a run of the burst to start")
        time.sleep(4)  # into the run: its process has started and reached the engine
        dev.engine.kill()
        time.sleep(3)
        dev.engine.start()
        wait_for(lambda: all(delta_versions(t) for t in bronze), 900, "every bronze table")
        dev.wait_idle(900, quiet=20)
        runs = dev.runs()
        messages = [m for r in runs for m in dev.run_messages(r["runId"])]
    retried = [m for m in messages if TRIED_AGAIN.search(m)]
    failed = [r for r in runs if r["status"] == "FAILURE"]
    assert retried or failed, "the engine's restart met no run: nothing was tested"
    # A failed run is followed by one that succeeded for the same job (a retry or the sensor's).
    for run in failed:
        assert any(r["jobName"] == run["jobName"] and r["status"] == "SUCCESS" for r in runs), run
    print(f"{len(runs)} runs, {len(failed)} failed, {len(retried)} tries again: {retried[:3]}")

    assert_every_source_exact(Lakehouse(root, spark, dg.DagsterInstance.ephemeral()))
