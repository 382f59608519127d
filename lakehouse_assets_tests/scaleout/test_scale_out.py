"""The demo on the scale-out stack: runs are clients of a Spark Connect engine whose jobs run on
a standalone cluster, the data root is a bucket on an S3-compatible server, and Dagster keeps
runs, event logs and sensor cursors in PostgreSQL.

Two rounds of the generator's data land in the bucket; after each, ``dagster asset materialize``
runs everything, and every contract table equals a clean local run over the same files (itself
checked against the answers computed in plain Python). A run with nothing new changes no Delta
version, and the Postgres-backed daemon's landing sensor picks up a file put into the bucket.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from dagster_postgres import PostgresRunStorage, PostgresScheduleStorage

from devstack.dagster_dev import DagsterDev
from devstack.environment import environment
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.engine.state.delta_log import delta_version
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets_tests.scaleout.stack import Stack, land_round, versions
from verification.contract import table_history
from verification.expected import expected_history
from verification.lakehouse import Lakehouse
from verification.reference import lost_and_duplicated, table_rows
from verification.runs import assert_events_exact

pytestmark = pytest.mark.slow
START = datetime(2026, 11, 20, 8, tzinfo=UTC)


def test_two_rounds_on_the_cluster_with_s3_and_postgres_equal_a_local_run(stack: Stack, spark, tmp_path) -> None:
    root = stack.s3.root("e2e")
    reference = Lakehouse(tmp_path / "reference", spark, dg.DagsterInstance.ephemeral())
    home, instance_env = stack.instance_home("e2e")
    for number in (1, 2):
        options = GeneratorOptions(files=2, rows=300, seed=40 + number, start=START + timedelta(hours=3 * number))
        land_round(root, reference.root, options)
        run = stack.materialize(f"round{number}", root, instance_env)
        assert run.returncode == 0, run.output
        started = time.monotonic()
        reference.materialize()
        print(f"round {number}: cluster run {run.seconds:.0f}s, local reference {time.monotonic() - started:.0f}s")

        differing = {t: d for t, d in lost_and_duplicated(spark, root, reference.root).items() if any(d)}
        assert not differing, f"round {number}: (missing, extra) rows per table: {differing}"
    # The reference itself holds the answers computed from the landed files.
    assert_events_exact(spark, reference.root)
    history, _, _ = expected_history(reference.root)
    assert table_history(reference) == history
    assert sum(table_rows(spark, root, "silver_events").values()) > 0

    before = versions(root)
    assert all(version is not None for version in before.values()), before
    run = stack.materialize("no-data", root, instance_env)
    assert run.returncode == 0, run.output
    assert versions(root) == before, "a run with nothing new changed a Delta version"

    with environment(instance_env), dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        runs = instance.get_runs()
        assert len(runs) == 3 and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)


def test_the_postgres_backed_daemon_sensor_picks_up_a_file_put_into_the_bucket(stack: Stack, spark, tmp_path) -> None:
    root = stack.s3.root("sensor")
    paths = LakehousePaths(root)
    home, instance_env = stack.instance_home("sensor")
    env = {**instance_env, "SPARK_REMOTE": stack.engine.url, "LAKEHOUSE_SENSOR_INTERVAL_SECONDS": "5"}
    with DagsterDev(root=root, home=home, env=env, log_path=tmp_path / "dagster-dev.log") as dev:
        (landed,) = generate(paths, GeneratorOptions(files=1, rows=200, seed=7, start=START), ["events"])
        deadline = time.monotonic() + 600
        while delta_version(paths.table("bronze_events")) is None or dev.runs(["STARTED", "STARTING", "QUEUED"]):
            assert time.monotonic() < deadline, f"no sensor run ingested {landed}; see {dev.log_path}"
            time.sleep(2)
        runs = dev.runs()
    assert runs and all(r["status"] == "SUCCESS" for r in runs), runs
    assert {t["value"] for r in runs for t in r["tags"] if t["key"] == "dagster/sensor_name"} == {
        "landing_events_sensor"
    }
    read = spark.read.format("delta").load(paths.table("bronze_events")).select("_source_file").collect()
    assert {r[0].rsplit("/", 1)[-1] for r in read} == {str(landed).rsplit("/", 1)[-1]}
    with environment(instance_env), dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)  # sensor cursors and ticks
        cursors = {state.name: state.instigator_data.cursor for state in instance.all_instigator_state()
                   if state.instigator_type.value == "SENSOR" and state.instigator_data}  # fmt: skip
        assert cursors.get("landing_events_sensor"), cursors
