"""The events pipeline materialized for real (Spark, Delta, Dagster) over several runs, each
table compared with answers computed independently from the landed files."""

from __future__ import annotations

import gzip
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.orchestrate.markdown import escape
from lakehouse_assets.lib.orchestrate.metadata import NO_CHANGE
from verification.contract import assert_tables_match_landed_files
from verification.expected import file_lines
from verification.lakehouse import Lakehouse, make_lakehouse

EVENTS_CHAIN = ["bronze_events", "silver_events", "gold_hourly_revenue"]
START = datetime(2026, 11, 20, 10, tzinfo=UTC)

EDGE_CASES = [
    json.dumps({"event_id": "edge-rescued", "event_time": "2026-11-20T10:30:00Z", "user_id": "c1",
                "event_type": "purchase", "amount": "12.50", "category": "books", "coupon": "X1"}),
    "",
    "   ",
    '{"event_id": "edge-truncated", "event_ti',
    '["an", "array"]',
    json.dumps({"event_id": "edge-offset", "event_time": "2026-11-20T12:10:00+02:00", "user_id": "c2",
                "event_type": "purchase", "amount": 7.25, "category": None,
                "user_agent": "Mozilla (iPad) Tablet"}),
    json.dumps({"event_id": "edge-no-zone", "event_time": "2026-11-20T10:59:59", "user_id": "c3",
                "event_type": "purchase", "amount": 0, "category": "toys", "user_agent": "Foo Mobile"}),
]  # fmt: skip


def land_round_one(lh: Lakehouse) -> None:
    generate(lh.paths, GeneratorOptions(files=2, rows=120, seed=11, start=START, gzip=0.5), ["events"])
    folder = lh.landing("events")
    (folder / "edge-cases.jsonl").write_text("\n".join(EDGE_CASES) + "\n")
    # In-progress names must be ignored until renamed.
    (folder / "_in-progress.jsonl").write_text(json.dumps({"event_id": "late-file"}) + "\n")
    (folder / ".hidden.jsonl").write_text(json.dumps({"event_id": "hidden"}) + "\n")


def land_round_two(lh: Lakehouse) -> None:
    folder = lh.landing("events")
    first_file = sorted(p for p in folder.iterdir() if p.name.startswith("events-"))[0]
    redelivered = [ln for ln in file_lines(first_file) if ln.strip()][:40]
    late_purchase = {"event_id": "late-purchase", "event_time": "2026-11-20T10:45:00Z", "user_id": "c9",
                     "event_type": "purchase", "amount": 1000.0, "category": "books"}  # fmt: skip
    with gzip.open(folder / "redelivery.jsonl.gz", "wt") as handle:
        handle.write("\n".join([*redelivered, json.dumps(late_purchase)]) + "\n")
    generate(lh.paths, GeneratorOptions(files=1, rows=80, seed=12, start=START, late=0.3), ["events"])
    (folder / "_in-progress.jsonl").rename(folder / "renamed-into-place.jsonl")


def metadata(result, asset: str) -> dict:
    (materialization,) = [m for m in result.get_asset_materialization_events() if m.asset_key.path == [asset]]
    return {k: v.value for k, v in materialization.materialization.metadata.items()}


@pytest.fixture(scope="module")
def runs(module_lakehouse: Lakehouse) -> dict:
    lh = module_lakehouse
    land_round_one(lh)
    first = lh.materialize(EVENTS_CHAIN)
    snapshot_one = assert_tables_match_landed_files(lh)
    land_round_two(lh)
    second = lh.materialize(EVENTS_CHAIN)
    return {"lh": lh, "first": first, "second": second, "expected_one": snapshot_one}


def test_first_run_matches_the_contract(runs: dict) -> None:
    assert runs["first"].success
    expected = runs["expected_one"]
    meta = metadata(runs["first"], "bronze_events")
    # Every line is read; the blank ones are dropped by the table's function.
    assert meta["rows_read"] - meta["reduced_by_function"] == sum(expected.lines_per_file.values())


def test_edge_cases_are_typed_rescued_or_quarantined(runs: dict) -> None:
    lh = runs["lh"]
    rescued = lh.table("bronze_events").where("event_id = 'edge-rescued'").first()
    assert rescued["amount"] is None
    assert json.loads(rescued["_rescued_data"]) == {"amount": "12.50", "coupon": "X1"}
    failed = lh.table("silver_events_quarantine").where("event_id = 'edge-rescued'").first()
    assert failed["failed_expectations"] == ["purchase_amount_valid"]
    offset = lh.table("silver_events").where("event_id = 'edge-offset'").first()
    assert offset["event_time"] == datetime(2026, 11, 20, 10, 10)
    assert (offset["device_type"], offset["category"]) == ("tablet", None)
    gold_unknown = lh.table("gold_hourly_revenue").where("category = 'unknown'").count()
    assert gold_unknown >= 1


def test_incremental_run_reads_only_new_files_and_stays_exact(runs: dict) -> None:
    lh, second, before = runs["lh"], runs["second"], runs["expected_one"]
    after = assert_tables_match_landed_files(lh)
    new_lines = sum(after.lines_per_file.values()) - sum(before.lines_per_file.values())
    meta = metadata(second, "bronze_events")
    assert meta["rows_read"] - meta["reduced_by_function"] == new_lines
    # Re-delivered records are kept in bronze but never duplicate silver.
    assert lh.table("bronze_events").where("event_id = 'late-purchase'").count() == 1
    late_window = (
        lh.table("gold_hourly_revenue")
        .where("window_start = timestamp'2026-11-20 10:00:00' AND category = 'books'")
        .first()
    )
    assert late_window["revenue"] >= 1000.0


def test_row_counts_in_the_metadata_are_the_tables_counts(runs: dict) -> None:
    # The second run's counts are derived from the first run's and the commits' row metrics
    # (appends, MERGE upserts, the gold recompute), not counted: they must still be exact.
    lh = runs["lh"]
    for event in runs["second"].get_asset_materialization_events():
        asset = event.asset_key.to_user_string()
        assert metadata(runs["second"], asset)["dagster/row_count"] == lh.table(asset).count(), asset


def test_every_table_is_found_by_name_in_the_catalog(runs: dict) -> None:
    # The run that created each table registered it under its own name (lib.engine.catalog).
    lh = runs["lh"]
    graph = lh.defs.resolve_asset_graph()
    for name in ("bronze_events", "bronze_events_quarantine", "silver_events", "gold_hourly_revenue"):
        by_name, by_path = lh.spark.table(name), lh.table(name)
        assert by_name.count() == by_path.count() > 0, name
        assert by_name.exceptAll(by_path).isEmpty() and by_path.exceptAll(by_name).isEmpty(), name
        assert graph.get(dg.AssetKey(name)).metadata["dagster/table_name"] == name


@pytest.mark.parametrize("run", ["first", "second"])
def test_metadata_describes_the_table_at_its_recorded_version(runs: dict, run: str) -> None:
    # Count, schema and preview come from the commits and the written micro-batch, not from
    # reading the table back: compare them with the table read at the version they name.
    lh = runs["lh"]
    for event in runs[run].get_asset_materialization_events():
        asset = event.asset_key.to_user_string()
        meta = metadata(runs[run], asset)
        table = lh.spark.read.format("delta").option("versionAsOf", meta["delta_version"]).load(lh.paths.table(asset))
        assert meta["dagster/row_count"] == table.count(), asset
        schema = [(c.name, c.type) for c in meta["dagster/column_schema"].columns]
        assert schema == [(f.name, f.dataType.simpleString()) for f in table.schema.fields], asset
        header, _, *rows = meta["preview"].splitlines()
        assert header == "| " + " | ".join(escape(c) for c in table.columns) + " |", asset
        assert 1 <= len(rows) <= 5 if meta["dagster/row_count"] else not rows, asset


def test_run_without_new_data_changes_nothing(runs: dict) -> None:
    lh = runs["lh"]
    versions = {t: DeltaTable.forPath(lh.spark, lh.paths.table(t)).history(1).first()["version"]
                for t in [*EVENTS_CHAIN, "bronze_events_quarantine", "silver_events_quarantine"]}  # fmt: skip
    result = lh.materialize(EVENTS_CHAIN)
    assert result.success
    # No zero figures replace the last run's: the materialization says it changed nothing and
    # carries the table's content figures.
    for table in EVENTS_CHAIN:
        meta = metadata(result, table)
        assert meta["change"] == NO_CHANGE and "rows_read" not in meta and "rows_written" not in meta, table
        assert meta["dagster/row_count"] == metadata(runs["second"], table)["dagster/row_count"], table
    for table, version in versions.items():
        assert DeltaTable.forPath(lh.spark, lh.paths.table(table)).history(1).first()["version"] == version, table
    assert_tables_match_landed_files(lh)


def test_full_refresh_rebuilds_the_same_tables(runs: dict) -> None:
    lh = runs["lh"]
    before = {t: sorted(map(str, lh.table(t).collect())) for t in ["silver_events", "gold_hourly_revenue"]}
    config = {"ops": {"silver_events": {"config": {"full_refresh": True}}}}
    result = lh.materialize(["silver_events", "gold_hourly_revenue"], run_config=config)
    assert result.success
    for table, rows in before.items():
        assert sorted(map(str, lh.table(table).collect())) == rows, table
    assert_tables_match_landed_files(lh)


def comparable(lh: Lakehouse, table: str) -> list[str]:
    """A table's rows without what legitimately differs between data roots and run times."""
    df = lh.table(table)
    drop = [c for c in ("_ingested_at", "customer_tier") if c in df.columns]
    if "_source_file" in df.columns:
        df = df.withColumn("_source_file", F.regexp_extract("_source_file", r"[^/]+$", 0))
    return sorted(map(str, df.drop(*drop).collect()))


def test_many_runs_equal_one_run_over_the_same_files(runs: dict, tmp_path: Path, spark) -> None:
    many = runs["lh"]
    one = make_lakehouse(tmp_path, spark)
    shutil.copytree(many.root / "landing", one.root / "landing")
    for hidden in (one.root / "landing" / "events").glob("[._]*"):
        hidden.unlink()
    assert one.materialize(EVENTS_CHAIN).success
    for table in [*EVENTS_CHAIN, "bronze_events_quarantine", "silver_events_quarantine"]:
        assert comparable(one, table) == comparable(many, table), table


def test_deleted_checkpoint_is_refused_with_the_fix(runs: dict) -> None:
    lh = runs["lh"]
    shutil.rmtree(lh.root / "checkpoints" / "silver_events")
    result = lh.materialize(["silver_events"], raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.step_failure_data.error.message
    assert "checkpoint is missing" in message and "full_refresh" in message
    config = {"ops": {"silver_events": {"config": {"full_refresh": True}}}}
    assert lh.materialize(["silver_events", "gold_hourly_revenue"], run_config=config).success
    assert_tables_match_landed_files(lh)


def test_a_kafka_sink_without_a_broker_says_nothing_was_sent(runs: dict) -> None:
    lh = runs["lh"]
    result = lh.materialize("gold_hourly_revenue_changes")
    shown = metadata(result, "gold_hourly_revenue_changes")
    assert shown["messages_sent"] == 0
    warned = shown["warnings"].replace("\\", "")  # Markdown, escaped
    assert "nothing sent or read" in warned and "LAKEHOUSE_KAFKA_BOOTSTRAP" in warned
    # How many changes wait for it: every change of gold_hourly_revenue so far, as its change feed
    # has them (an update once), counted here from the feed itself.
    feed = lh.spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
    changes = feed.load(lh.paths.table("gold_hourly_revenue")).where("_change_type <> 'update_preimage'").count()
    assert shown["changes_waiting"] == changes > 0 and f"{changes} change(s) in" in warned
    assert not Path(lh.paths.checkpoint("gold_hourly_revenue_changes"), "commits").exists()  # nothing was read
