"""Asset checks: each passes on a healthy table and fails on a deliberately damaged one."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import dagster as dg
import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from lakehouse_assets.generate import GeneratorOptions, generate
from verification.lakehouse import Lakehouse

CHAIN = ["bronze_events", "silver_events", "gold_hourly_revenue"]
# The chain with its quarantine tables, which carry the quarantine checks.
WITH_QUARANTINES = [*CHAIN, "bronze_events_quarantine", "silver_events_quarantine"]


def evaluations(result: dg.ExecuteInProcessResult) -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
    return {
        (e.asset_key.to_user_string(), e.check_name): e
        for e in (ev.event_specific_data for ev in result.all_events if ev.event_type_value == "ASSET_CHECK_EVALUATION")
    }


def materialized(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


@pytest.fixture(scope="module")
def healthy(module_lakehouse: Lakehouse) -> tuple[Lakehouse, dg.ExecuteInProcessResult]:
    lh = module_lakehouse
    start = datetime(2026, 11, 20, 8, tzinfo=UTC)
    generate(lh.paths, GeneratorOptions(files=1, rows=120, seed=5, start=start, bad_lines=0.02), ["events"])
    return lh, lh.materialize(WITH_QUARANTINES)


def test_every_check_passes_on_healthy_tables(healthy) -> None:
    _, result = healthy
    assert result.success
    checks = evaluations(result)
    expected = {
        ("bronze_events", "landed_lines_conserved"), ("bronze_events", "required_columns_not_null"),
        ("bronze_events", "schema_unchanged"),
        ("bronze_events_quarantine", "quarantine_rate"), ("bronze_events_quarantine", "quarantine_rows_traceable"),
        ("silver_events", "unique_event_id"), ("silver_events", "required_columns_not_null"),
        ("silver_events", "schema_unchanged"),
        ("silver_events_quarantine", "quarantine_rate"), ("silver_events_quarantine", "quarantine_rows_traceable"),
        ("gold_hourly_revenue", "unique_window_start_category"),
        ("gold_hourly_revenue", "required_columns_not_null"),
        ("gold_hourly_revenue", "reconciles_with_silver_events"), ("gold_hourly_revenue", "schema_unchanged"),
    }  # fmt: skip
    assert expected <= set(checks)
    failed = {k: e.metadata for k, e in checks.items() if not e.passed}
    assert not failed
    assert checks[("bronze_events", "landed_lines_conserved")].metadata["files_checked"].value == 1
    # silver_events' own MERGE keeps event_id unique: its first check establishes it on the whole table.
    assert checks[("silver_events", "unique_event_id")].metadata["evaluated"].value == "every key of the whole table"
    traced = checks[("bronze_events_quarantine", "quarantine_rows_traceable")].metadata
    assert traced["columns"].value == "raw_line, _source_file" and traced["rows_missing_a_column"].value == 0
    assert lh_quarantined(healthy) > 0  # the check looked at rows, not at an empty table


def lh_quarantined(healthy) -> int:
    lh, _ = healthy
    return lh.table("bronze_events_quarantine").count()


def test_a_quarantined_row_without_its_line_fails_traceability(healthy) -> None:
    lh, _ = healthy
    path = lh.paths.table("bronze_events_quarantine")
    line = lh.table("bronze_events_quarantine").first()["raw_line"]
    quoted = line.replace("\\", "\\\\").replace("'", "\\'")
    same = lh.table("bronze_events_quarantine").where(F.col("raw_line") == line).count()
    lh.spark.sql(f"UPDATE delta.`{path}` SET raw_line = NULL WHERE raw_line = '{quoted}'")
    result = lh.materialize(WITH_QUARANTINES, raise_on_error=False)
    check = evaluations(result)[("bronze_events_quarantine", "quarantine_rows_traceable")]
    assert not check.passed and check.metadata["null_counts"].value == {"raw_line": same}
    # Put the line back: the same rows per file, so the checks of the tests after this one hold.
    lh.spark.sql(f"UPDATE delta.`{path}` SET raw_line = '{quoted}' WHERE raw_line IS NULL")


def test_reconciliation_is_carried_over_while_neither_table_changes(healthy) -> None:
    lh, first = healthy
    key = ("gold_hourly_revenue", "reconciles_with_silver_events")
    scanned = evaluations(first)[key]
    rerun = evaluations(lh.materialize(["gold_hourly_revenue"]))[key]
    assert rerun.passed
    assert rerun.metadata["evaluated"].value == "carried over (neither table changed)"
    versions = {name: DeltaTable.forPath(lh.spark, lh.paths.table(name)).history(1).first()["version"]
                for name in ("gold_hourly_revenue", "silver_events")}  # fmt: skip
    assert rerun.metadata["delta_version"].value == versions["gold_hourly_revenue"]
    assert rerun.metadata["silver_events_delta_version"].value == versions["silver_events"]
    assert {k: v.value for k, v in rerun.metadata.items() if k not in ("evaluated", "duration_s")} == {
        k: v.value for k, v in scanned.metadata.items() if k not in ("evaluated", "duration_s")
    }


def test_reconciliation_follows_the_change_feeds_of_a_new_file(healthy) -> None:
    lh, _ = healthy
    later = datetime(2026, 11, 20, 11, tzinfo=UTC)
    generate(lh.paths, GeneratorOptions(files=1, rows=80, seed=6, start=later, bad_lines=0.0), ["events"])
    result = lh.materialize(CHAIN)
    check = evaluations(result)[("gold_hourly_revenue", "reconciles_with_silver_events")]
    assert check.passed
    # The new file's events went in by silver_events' own MERGE: only the keys it inserted are read.
    unique = {k: v.value for k, v in evaluations(result)[("silver_events", "unique_event_id")].metadata.items()}
    assert unique["evaluated"].startswith("the keys inserted since version"), unique
    assert unique["duplicate_keys"] == 0 and unique["evaluations_since_full_scan"] == 1
    events = lh.table("silver_events")
    assert events.count() == events.select("event_id").distinct().count()
    metadata = {k: v.value for k, v in check.metadata.items()}
    assert metadata["evaluated"] == "followed through the change data feeds"
    assert metadata["evaluations_since_full_scan"] == 1
    purchases = lh.table("silver_events").where("event_type = 'purchase'")
    silver = purchases.agg(F.sum("amount").cast("double"), F.count(F.lit(1))).first()
    gold = lh.table("gold_hourly_revenue").agg(F.sum("revenue").cast("double"), F.sum("orders")).first()
    assert silver[1] > 0
    assert metadata["revenue_in_silver_events"] == pytest.approx(silver[0])
    assert metadata["orders_in_silver_events"] == silver[1]
    assert metadata["revenue"] == pytest.approx(gold[0]) and metadata["orders"] == gold[1]


def rerun_with_damage(lh: Lakehouse, damage, selection=CHAIN) -> dg.ExecuteInProcessResult:
    damage()
    return lh.materialize(selection, raise_on_error=False)


def repair(lh: Lakehouse, table: str) -> None:
    config = {"ops": {table: {"config": {"full_refresh": True}}}}
    result = lh.materialize([table, *CHAIN[CHAIN.index(table) + 1 :]], run_config=config)
    assert result.success


def test_duplicate_key_blocks_downstream(healthy) -> None:
    lh, _ = healthy
    silver = lh.paths.table("silver_events")
    duplicate = lh.table("silver_events").limit(1)
    event_id = duplicate.first()["event_id"]
    result = rerun_with_damage(lh, lambda: duplicate.write.format("delta").mode("append").save(silver))
    check = evaluations(result)[("silver_events", "unique_event_id")]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["duplicate_keys"].value == 1
    assert check.metadata["evaluated"].value == "every key of the whole table"  # a commit by hand
    assert event_id in check.metadata["examples"].value
    assert not result.success
    assert "gold_hourly_revenue" not in materialized(result), "a blocking failure must skip downstream"
    repair(lh, "silver_events")


def test_null_in_required_column_fails(healthy) -> None:
    lh, _ = healthy
    table = DeltaTable.forPath(lh.spark, lh.paths.table("silver_events"))
    victim = lh.table("silver_events").first()["event_id"]
    result = rerun_with_damage(lh, lambda: table.update(F.col("event_id") == victim, {"device_type": F.lit(None)}))
    check = evaluations(result)[("silver_events", "required_columns_not_null")]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert json.loads(json.dumps(check.metadata["null_counts"].value)) == {"device_type": 1}
    assert not result.success and "gold_hourly_revenue" not in materialized(result)
    repair(lh, "silver_events")


def test_row_deleted_from_gold_breaks_reconciliation(healthy) -> None:
    lh, _ = healthy
    gold = DeltaTable.forPath(lh.spark, lh.paths.table("gold_hourly_revenue"))
    row = lh.table("gold_hourly_revenue").orderBy("window_start").first()
    condition = (F.col("window_start") == F.lit(row["window_start"])) & (F.col("category") == row["category"])
    result = rerun_with_damage(lh, lambda: gold.delete(condition), ["gold_hourly_revenue"])
    check = evaluations(result)[("gold_hourly_revenue", "reconciles_with_silver_events")]
    assert not check.passed and not result.success
    metadata = {k: v.value for k, v in check.metadata.items()}
    assert metadata["orders_in_silver_events"] - metadata["orders"] == row["orders"]
    assert metadata["scope"] == "full table" and metadata["evaluated"] == "full scan"
    repair(lh, "gold_hourly_revenue")


def test_dropped_column_is_reported(healthy) -> None:
    lh, _ = healthy
    path = lh.paths.table("gold_hourly_revenue")
    narrowed = lh.table("gold_hourly_revenue").drop("buyers").localCheckpoint()
    result = rerun_with_damage(
        lh,
        lambda: narrowed.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path),
        ["gold_hourly_revenue"],
    )
    check = evaluations(result)[("gold_hourly_revenue", "schema_unchanged")]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["removed"].value == "buyers"
    assert not result.success
    lh.spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (buyers bigint)")
    repair(lh, "gold_hourly_revenue")


def test_high_quarantine_rate_warns_without_blocking(healthy) -> None:
    lh, _ = healthy
    folder = lh.landing("events")
    good = json.dumps({"event_id": "q-ok", "event_time": "2026-11-20T08:00:00Z", "user_id": "c1",
                       "event_type": "page_view"})  # fmt: skip
    (folder / "mostly-bad.jsonl").write_text("\n".join([good] + ["garbage"] * 9) + "\n")
    result = lh.materialize(WITH_QUARANTINES, raise_on_error=False)
    check = evaluations(result)[("bronze_events_quarantine", "quarantine_rate")]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["quarantine_share"].value == 0.9
    assert result.success and {"silver_events", "gold_hourly_revenue"} <= materialized(result)


def test_lost_bronze_row_breaks_conservation(healthy) -> None:
    lh, _ = healthy
    bronze = DeltaTable.forPath(lh.spark, lh.paths.table("bronze_events"))
    victim = lh.table("bronze_events").where("event_id IS NOT NULL").first()
    result = rerun_with_damage(lh, lambda: bronze.delete(F.col("event_id") == victim["event_id"]), ["bronze_events"])
    check = evaluations(result)[("bronze_events", "landed_lines_conserved")]
    assert not check.passed and not result.success
    assert check.metadata["files_mismatched"].value == 1


def test_scd2_history_check_catches_two_current_versions(lakehouse: Lakehouse) -> None:
    folder = lakehouse.landing("customers")
    (folder / "changes.csv").write_text(
        "customer_id,name,email,tier,country,op,updated_at\n"
        "c1,Ada,a@x,gold,DE,upsert,2026-11-01T00:00:00Z\n"
        "c1,Ada,a@x,platinum,DE,upsert,2026-11-02T00:00:00Z\n"
        "c2,Bob,b@x,silver,FR,upsert,2026-11-01T00:00:00Z\n"
    )
    selection = ["bronze_customers", "silver_customers"]
    healthy = lakehouse.materialize(selection)
    assert evaluations(healthy)[("silver_customers", "scd2_history_valid")].passed
    table = DeltaTable.forPath(lakehouse.spark, lakehouse.paths.table("silver_customers"))
    table.update((F.col("customer_id") == "c1") & ~F.col("is_current"), {"is_current": F.lit(True)})
    result = lakehouse.materialize(selection, raise_on_error=False)
    check = evaluations(result)[("silver_customers", "scd2_history_valid")]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["keys_with_several_current"].value == 1
    assert check.metadata["current_flag_mismatches"].value == 1
    assert "c1" in check.metadata["examples"].value
    assert not result.success


def test_every_column_of_every_table_is_described(healthy) -> None:
    _, result = healthy
    schemas = {
        m.asset_key.to_user_string(): m.materialization.metadata["dagster/column_schema"].value
        for m in result.get_asset_materialization_events()
        if "dagster/column_schema" in m.materialization.metadata
    }
    assert set(WITH_QUARANTINES) <= set(schemas), sorted(schemas)
    undescribed = {name: [c.name for c in s.columns if not c.description] for name, s in schemas.items()}
    assert {name: columns for name, columns in undescribed.items() if columns} == {}
