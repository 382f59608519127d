"""Exactly once under crashes: SIGKILL the whole run at the dangerous instants, rerun, and
compare every table with the answer computed from the landed files. (Kills at random instants
of the events chain, files and Kafka messages together, are in ``test_kafka.py``; ``make chaos``
does hundreds.)"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.paths import LakehousePaths
from verification.contract import assert_tables_match_landed_files
from verification.crash import materialize_in_child
from verification.expected import expected_history, history_rows, scd2_row
from verification.lakehouse import Lakehouse, make_lakehouse
from verification.reference import lost_and_duplicated, mirror_landing

CHAIN = "bronze_events,bronze_events_quarantine,silver_events,silver_events_quarantine,gold_hourly_revenue"
START = datetime(2026, 11, 20, 6, tzinfo=UTC)

pytestmark = pytest.mark.slow


def land(root: Path, seed: int) -> None:
    options = GeneratorOptions(files=2, rows=150, seed=seed, start=START, duplicate=0.1, bad_lines=0.05, late=0.2)
    generate(LakehousePaths(str(root / "lakehouse")), options, ["events"])


def test_kills_at_the_dangerous_instants_lose_and_duplicate_nothing(tmp_path: Path, spark) -> None:
    faults = ("bronze_events:after_table_write", "silver_events:after_table_write",
              "gold_hourly_revenue:after_table_write", "bronze_events:after_batch_writes")  # fmt: skip
    for seed, fault in enumerate(faults):
        land(tmp_path, seed=21 + seed)  # new data, so the query reaches the fault point
        outcome = materialize_in_child(tmp_path, CHAIN, fault=fault)
        assert outcome.killed, f"{fault} did not fire:\n{outcome.output}"
    final = materialize_in_child(tmp_path, CHAIN)
    assert final.returncode == 0, final.output
    assert_tables_match_landed_files(Lakehouse(tmp_path / "lakehouse", spark, None))  # type: ignore[arg-type]


# The other sinks at their dangerous instants: the CSV bronze's two writes, the SCD2 MERGE, the
# recompute MERGE and the two stateful (watermark) queries. In the order the run reaches them,
# so each run gets one step further than the last before it is killed.
STATEFUL_FAULTS = (
    "bronze_customers:after_batch_writes",
    "gold_ad_attribution:after_table_write",
    "silver_customers:after_table_write",
    "gold_customer_ltv:after_table_write",
    "gold_user_sessions:after_table_write",
)


def test_kills_in_merge_scd2_and_stateful_tables_leave_what_a_clean_run_leaves(tmp_path: Path, spark) -> None:
    subject, reference = tmp_path / "subject", tmp_path / "reference"
    options = GeneratorOptions(files=1, rows=300, seed=40, start=START, late=0.2, duplicate=0.1)
    # Two hours of data, so the watermark (latest time - 1 hour) passes the attribution windows of
    # the first hour's impressions and gold_ad_attribution writes them in the same run.
    later = replace(options, seed=41, start=START + timedelta(hours=2))
    paths = LakehousePaths(str(subject / "lakehouse"))
    files = generate(paths, options) + generate(paths, later)
    mirror_landing(files, subject / "lakehouse", reference / "lakehouse")
    # The reference: the same files, one clean run.
    assert materialize_in_child(reference, "*").returncode == 0
    for fault in STATEFUL_FAULTS:
        outcome = materialize_in_child(subject, "*", fault=fault)
        assert outcome.killed, f"{fault} did not fire:\n{outcome.output}"
    final = materialize_in_child(subject, "*")
    assert final.returncode == 0, final.output
    spark.catalog.clearCache()
    differences = lost_and_duplicated(spark, subject / "lakehouse", reference / "lakehouse")
    assert {t: d for t, d in differences.items() if any(d)} == {}
    history, _, _ = expected_history(subject / "lakehouse")
    silver_customers = spark.read.format("delta").load(str(subject / "lakehouse" / "tables" / "silver_customers"))
    assert Counter(scd2_row(r) for r in silver_customers.collect()) == history_rows(history)


def test_a_full_refresh_killed_midway_then_rerun_leaves_exact_tables(tmp_path: Path, spark) -> None:
    land(tmp_path, seed=50)
    assert materialize_in_child(tmp_path, CHAIN).returncode == 0
    land(tmp_path, seed=51)
    refresh = {"ops": {"silver_events": {"config": {"full_refresh": True}}}}
    # Killed after the rebuild's first Delta commit, before its checkpoint records it.
    outcome = materialize_in_child(tmp_path, CHAIN, fault="silver_events:after_table_write", run_config=refresh)
    assert outcome.killed, outcome.output
    # A plain run picks the rebuild up where it stopped; a second full refresh also ends exact.
    assert materialize_in_child(tmp_path, CHAIN).returncode == 0
    assert_tables_match_landed_files(Lakehouse(tmp_path / "lakehouse", spark, None))  # type: ignore[arg-type]
    outcome = materialize_in_child(tmp_path, CHAIN, fault="silver_events:after_table_write", run_config=refresh)
    assert outcome.killed, outcome.output
    assert materialize_in_child(tmp_path, CHAIN, run_config=refresh).returncode == 0
    spark.catalog.clearCache()
    assert_tables_match_landed_files(Lakehouse(tmp_path / "lakehouse", spark, None))  # type: ignore[arg-type]


def test_a_table_creation_cut_off_before_its_first_commit_is_created_on_the_next_run(tmp_path: Path, spark) -> None:
    """An engine killed while creating a quarantine table leaves ``_delta_log`` with only a
    temporary file; Delta then answers CREATE TABLE IF NOT EXISTS without creating the table.
    Found by ``make chaos CHAOS_ARGS=--engine``: the next run failed reading the quarantine."""
    lh = make_lakehouse(tmp_path, spark)
    generate(lh.paths, GeneratorOptions(files=1, rows=40, seed=70, start=START, bad_lines=0, blank_lines=0), ["events"])
    cut_off = lh.root / "tables" / "bronze_events_quarantine" / "_delta_log"
    (cut_off / "_staged_commits").mkdir(parents=True)
    (cut_off / ".00000000000000000000.json.0b6e4d2c-0000-4000-8000-000000000000.tmp").write_text("{}")

    result = lh.materialize(["bronze_events", "bronze_events_quarantine"])

    assert result.success
    assert lh.table("bronze_events_quarantine").count() == 0  # created, and no line was bad
    assert lh.table("bronze_events").count() == 40
