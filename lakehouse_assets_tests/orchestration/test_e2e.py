"""End to end under ``dagster dev``: files dropped into the landing zone reach gold by themselves.

One ``dagster dev`` (the repository's dagster.yaml with storage in a temporary DAGSTER_HOME, a
temporary data root, every run a client of one Spark Connect engine, as under ``make dev``) runs
the whole time:

1. a burst of three events files lands: the sensor starts one run, gold gets a version;
2. a file produced earlier is renamed into place with its old mtime (2 days; for older files see
   test_orchestration_old_mtime.py): it reaches gold too;
3. two ``ingest_events`` runs are launched through the UI's GraphQL API while a new file lands,
   so runs overlap: the per-table pools queue their steps (never two writers per table); the
   sensor waits for them and, if the file is still new to it, runs after them;
4. ``dagster dev`` restarts on the same instance: runs and their logs are still there.

Every table is exact afterwards, and every run of phases 1-2 was started by the sensor.
"""

from __future__ import annotations

import os

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # Spark binds to 127.0.0.1 only

import itertools
import json
import time
import uuid
from pathlib import Path

import dagster as dg
import pytest

from devstack.dagster_dev import IN_FLIGHT, DagsterDev, delta_versions, isolated_home
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.paths import LakehousePaths
from verification.runs import assert_events_exact, assert_no_overlap, step_intervals, wait_for

pytestmark = pytest.mark.slow

GOLD = "gold_hourly_revenue"
ENV = {"SPARK_LOCAL_IP": "127.0.0.1", "LAKEHOUSE_SENSOR_INTERVAL_SECONDS": "5"}


def gold_version(paths: LakehousePaths) -> int:
    versions = delta_versions(paths.local_path(paths.table(GOLD)))
    return versions[-1][0] if versions else -1


def launch(dev: DagsterDev, job: str) -> str:
    repo = dev.graphql("{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }")
    node = repo["repositoriesOrError"]["nodes"][0]
    data = dev.graphql(
        """mutation Launch($p: ExecutionParams!) {
             launchRun(executionParams: $p) {
               __typename
               ... on LaunchRunSuccess { run { runId } }
               ... on PythonError { message }
               ... on RunConfigValidationInvalid { errors { message } }
             }
           }""",
        {
            "p": {
                "selector": {
                    "repositoryLocationName": node["location"]["name"],
                    "repositoryName": node["name"],
                    "jobName": job,
                },
                "runConfigData": {},
            }
        },
    )
    result = data["launchRun"]
    assert result["__typename"] == "LaunchRunSuccess", result
    return result["run"]["runId"]


def tags(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


def test_dropped_files_reach_gold_without_any_launch(tmp_path: Path, spark) -> None:
    home = isolated_home(tmp_path / "home")
    root = tmp_path / "lakehouse"
    paths = LakehousePaths(str(root))
    started = time.monotonic()
    # As `make dev` runs: every run a client of one Spark Connect engine beside dagster dev.
    with DagsterDev(root=root, home=home, env=ENV, engine=True) as dev:
        # 1. a burst of files: one run, gold changes
        generate(paths, GeneratorOptions(files=3, rows=300, seed=11), ["events"])
        wait_for(lambda: gold_version(paths) >= 0, 600, "gold after the burst")
        dev.wait_idle(600, quiet=8)
        version = gold_version(paths)

        # 2. a file renamed into place with an mtime 2 days old
        folder = paths.local_path(paths.landing("events"))
        (staged,) = generate(
            LakehousePaths(str(tmp_path / "producer")), GeneratorOptions(files=1, rows=300, seed=12), ["events"]
        )
        old = time.time() - 2 * 24 * 3600
        os.utime(staged, (old, old))
        os.replace(staged, folder / f"old-mtime-{uuid.uuid4().hex[:6]}-{staged.name}")
        wait_for(lambda: gold_version(paths) > version, 600, "gold after the old-mtime file")
        dev.wait_idle(600, quiet=8)

        sensor_runs = dev.runs()
        assert sensor_runs and all(r["status"] == "SUCCESS" for r in sensor_runs), sensor_runs
        assert all(tags(r).get("dagster/sensor_name") == "landing_events_sensor" for r in sensor_runs)
        assert 2 <= len(sensor_runs) <= 3, [tags(r) for r in sensor_runs]  # 4 files, burst merged
        sensor_phase = time.monotonic() - started

        # 3. overlapping runs under the run queue: two launched through the UI's API while a file
        #    lands; the sensor waits for them (they carry the source's tag), then runs if need be
        manual = [launch(dev, "ingest_events"), launch(dev, "ingest_events")]
        generate(paths, GeneratorOptions(files=1, rows=300, seed=13), ["events"])
        dev.wait_idle(1800, quiet=15)
        all_runs = dev.runs()
        assert all(r["status"] == "SUCCESS" for r in all_runs), [(r["jobName"], r["status"]) for r in all_runs]
        earlier = {r["runId"] for r in sensor_runs}
        overlap_ids = [r["runId"] for r in all_runs if r["runId"] not in earlier]
        assert set(manual) <= set(overlap_ids) and len(overlap_ids) <= 3

    # 4. restart on the same instance: runs and logs survive
    with DagsterDev(root=root, home=home, env=ENV) as dev:
        after = {r["runId"]: r for r in dev.runs()}
        assert set(after) >= {r["runId"] for r in all_runs}
        logs = dev.graphql(
            """query Logs($id: ID!) { logsForRun(runId: $id) { ... on EventConnection { events { __typename } } } }""",
            {"id": all_runs[-1]["runId"]},
        )
        assert len(logs["logsForRun"]["events"]) > 10
        # nothing new landed, so the restarted sensor requests nothing
        time.sleep(12)
        assert not dev.runs(IN_FLIGHT) and len(dev.runs()) == len(after)

    instance = dg.DagsterInstance.from_config(str(home))
    try:
        # one process per run (DefaultRunLauncher + in_process_executor), a client of the engine
        for run in all_runs:
            starts = instance.all_logs(run["runId"], of_type={dg.DagsterEventType.STEP_START})
            assert len({record.dagster_event.pid for record in starts}) == 1, run["runId"]
        intervals = step_intervals(instance, [r["runId"] for r in all_runs])
        assert_no_overlap(intervals)
        spans = [(min(s for sp in intervals.values() for s, _, r in sp if r == run_id),
                  max(e for sp in intervals.values() for _, e, r in sp if r == run_id))
                 for run_id in overlap_ids]  # fmt: skip
        spans.sort()
        assert any(b[0] < a[1] for a, b in itertools.pairwise(spans)), "runs did not overlap; nothing was tested"
    finally:
        instance.dispose()
    assert_events_exact(spark, root)
    print(
        json.dumps(
            {"sensor_phase_s": round(sensor_phase), "total_s": round(time.monotonic() - started), "runs": len(all_runs)}
        )
    )
