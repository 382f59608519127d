"""A broken customers file fails the customers feed only: the events chain still runs, joining
the last good customers version, and its run names the failed lookup input (issue 23).

Runs go through the ingest jobs the landing sensors launch, one per landing source, and through
the refresh schedule's run requests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest

from lakehouse_assets.definitions import TABLES
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.orchestrate.schedules import refresh_requests
from verification.lakehouse import Lakehouse
from verification.runs import assert_events_exact

START = datetime(2026, 11, 20, 10, tzinfo=UTC)
WRONG_HEADER = "customer_id,full_name,email,tier,country,op,updated_at\nc-1,Ann,a@example.com,gold,US,upsert,2026-11-20T10:00:00Z\n"
CUSTOMERS_FEED = {"bronze_customers", "bronze_customers_quarantine", "silver_customers", "silver_customers_quarantine"}


def run_job(lh: Lakehouse, name: str) -> dg.ExecuteInProcessResult:
    return lh.defs.resolve_job_def(name).execute_in_process(instance=lh.instance, raise_on_error=False)


def warnings_of(lh: Lakehouse, result: dg.ExecuteInProcessResult) -> list[str]:
    return [e.user_message for e in lh.instance.all_logs(result.run_id) if e.level >= 30 and e.user_message]


def test_each_landing_source_runs_alone_and_lookups_are_not_followed() -> None:
    requests = {r.tags["lakehouse/landing_source"]: r for r in refresh_requests(TABLES, "t")}
    assert set(requests) == {"events", "customers", "ad_impressions", "ad_clicks"}
    customers = {k.to_user_string() for k in requests["customers"].asset_selection}
    assert customers == CUSTOMERS_FEED, "silver_events only looks customers up: not in the customers run"
    events = {k.to_user_string() for k in requests["events"].asset_selection}
    assert {"silver_events", "gold_hourly_revenue", "gold_customer_ltv", "gold_user_sessions"} <= events
    assert not events & CUSTOMERS_FEED


@pytest.mark.slow
def test_a_broken_customers_file_does_not_stop_the_revenue_tables(lakehouse: Lakehouse) -> None:
    lh = lakehouse
    generate(lh.paths, GeneratorOptions(files=1, rows=120, seed=31, start=START))
    assert lh.materialize().success
    revenue_before = lh.table("gold_hourly_revenue").count()

    (lh.landing("customers") / "broken.csv").write_text(WRONG_HEADER)
    generate(
        lh.paths, GeneratorOptions(files=1, rows=120, seed=32, start=START + timedelta(hours=3)), sources=["events"]
    )

    customers = run_job(lh, "ingest_customers")
    assert not customers.success
    failed = {e.step_key for e in customers.all_events if e.event_type_value == "STEP_FAILURE"}
    assert failed == {"bronze_customers"}

    events = run_job(lh, "ingest_events")
    assert events.success
    # Every landed event, the new ones included, is in bronze, silver and gold (answers
    # computed from the landing files in the test).
    assert_events_exact(lh.spark, lh.root)
    assert lh.table("gold_hourly_revenue").count() > revenue_before, "the new hours reached gold"
    notes = [w for w in warnings_of(lh, events) if "lookup silver_customers" in w]
    assert len(notes) == 1, warnings_of(lh, events)
    assert "bronze_customers failed to materialize" in notes[0] and customers.run_id[:8] in notes[0]
    assert "header" in notes[0].lower(), "the reason is named"
    silver = events.asset_materializations_for_node("silver_events")[0].metadata
    assert "bronze_customers failed" in silver["stale_lookups"].value
    # Columns carry descriptions: the table's own and the framework's.
    described = {c.name: c.description for c in silver["dagster/column_schema"].value.columns}
    assert "silver_customers" in described["customer_tier"]
    quarantine = next(
        m.metadata
        for m in events.asset_materializations_for_node("bronze_events")
        if m.asset_key.path == ["bronze_events_quarantine"]
    )
    assert all(c.description for c in quarantine["dagster/column_schema"].value.columns)

    # Once the file is fixed the feed catches up and the note goes away.
    (lh.landing("customers") / "broken.csv").unlink()
    assert run_job(lh, "ingest_customers").success
    generate(
        lh.paths, GeneratorOptions(files=1, rows=50, seed=33, start=START + timedelta(hours=5)), sources=["events"]
    )
    again = run_job(lh, "ingest_events")
    assert again.success and not [w for w in warnings_of(lh, again) if "lookup" in w]
    assert_events_exact(lh.spark, lh.root)
