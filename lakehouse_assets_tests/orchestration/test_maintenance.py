"""Nightly maintenance: OPTIMIZE compacts the small files of many runs, VACUUM keeps a safe
retention, before/after figures are reported, and the table's contents do not change."""

from __future__ import annotations

import os

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # Spark binds to 127.0.0.1 only

import dagster as dg
import pytest

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.orchestrate.maintenance import SAFE_RETENTION_HOURS


def run_maintenance(lakehouse, table: str, retention_hours: int = SAFE_RETENTION_HOURS):
    job = lakehouse.defs.resolve_job_def(f"maintain_{table}")
    return job.execute_in_process(
        instance=lakehouse.instance,
        run_config={"ops": {f"optimize_vacuum_{table}": {"config": {"retention_hours": retention_hours}}}},
        raise_on_error=False,
    )


def test_maintenance_compacts_and_reports(lakehouse) -> None:
    for seed in range(3):  # three runs: three small files (at least) in bronze_events
        generate(lakehouse.paths, GeneratorOptions(files=1, rows=100, seed=seed), ["events"])
        lakehouse.materialize("bronze_events")
    before_rows = sorted(map(tuple, lakehouse.table("bronze_events").drop("_ingested_at").collect()), key=str)

    result = run_maintenance(lakehouse, "bronze_events")
    assert result.success
    observations = {
        e.asset_observation_data.asset_observation.asset_key.to_user_string(): e.asset_observation_data.asset_observation
        for e in result.all_events
        if e.event_type == dg.DagsterEventType.ASSET_OBSERVATION
    }
    assert set(observations) == {"bronze_events", "bronze_events_quarantine"}
    meta = {k: v.value for k, v in observations["bronze_events"].metadata.items()}
    assert meta["maintenance/active_files_before"] >= 3
    assert meta["maintenance/active_files_after"] == 1
    assert meta["maintenance/optimize_files_removed"] >= 3
    # VACUUM keeps the compacted-away files: they are younger than the 7-day retention
    assert meta["maintenance/stored_files_after"] >= meta["maintenance/stored_files_before"]
    assert meta["maintenance/retention_hours"] == SAFE_RETENTION_HOURS
    # silver_events reads bronze_events but has not run yet: it will start at the latest version
    assert (
        meta["maintenance/vacuum_kept"]
        == "168 hours as configured: no reader of the project has a version left to read"
    )
    assert "maintenance/oldest_reader" not in meta
    for key in ("active_bytes_before", "active_bytes_after", "stored_bytes_before", "stored_bytes_after"):
        assert meta[f"maintenance/{key}"] > 0

    after_rows = sorted(map(tuple, lakehouse.table("bronze_events").drop("_ingested_at").collect()), key=str)
    assert after_rows == before_rows
    # streaming readers skip OPTIMIZE's dataChange=false commit: silver still gets every row once
    lakehouse.materialize("silver_events")
    assert lakehouse.table("silver_events").count() > 0
    assert (
        lakehouse.table("silver_events").select("event_id").distinct().count()
        == lakehouse.table("silver_events").count()
    )


def test_unsafe_retention_is_refused(lakehouse) -> None:
    generate(lakehouse.paths, GeneratorOptions(files=1, rows=20, seed=1), ["events"])
    lakehouse.materialize("bronze_events")
    result = run_maintenance(lakehouse, "bronze_events", retention_hours=1)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE)
    assert "safe minimum" in failure.step_failure_data.error.message or "safe minimum" in str(
        failure.step_failure_data.user_failure_data
    )


@pytest.mark.parametrize("table", ["gold_hourly_revenue"])
def test_maintenance_of_a_missing_table_is_a_no_op(lakehouse, table: str) -> None:
    result = run_maintenance(lakehouse, table)
    assert result.success
    assert not [e for e in result.all_events if e.event_type == dg.DagsterEventType.ASSET_OBSERVATION]
