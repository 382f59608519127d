"""A run's figures add up, agree with its log lines and with the tables, and a run with nothing
new records no figures over the last real ones (issue 23).

The demo is materialized three times: two rounds of generated files for every source with a
round without new files between them. The figures are compared with what the tables gained,
counted in the test, and with the lines the run logged."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib import timings
from lakehouse_assets.lib.orchestrate.metadata import NO_CHANGE
from verification.expected import file_lines, is_blank
from verification.lakehouse import Lakehouse
from verification.reference import ALL_TABLES

pytestmark = pytest.mark.slow

START = datetime(2026, 11, 20, 10, tzinfo=UTC)
DROPPED_KINDS = ("dropped_expectations", "dropped_duplicates", "dropped_late")
SUMMARY = re.compile(r"^(\w+): (\d+) rows read = (\d+) written \+ (\d+) quarantined \+ (\d+) dropped")
BATCH = re.compile(r"^(\w+): batch \d+: (\d+) rows in ")
# A JSON-lines landing table reads every line; its function drops the blank ones.
JSON_LANDING = {"bronze_events": "events", "bronze_ad_impressions": "ad_impressions", "bronze_ad_clicks": "ad_clicks"}
# Tables that read one other table's new rows as their stream.
STREAMED_FROM = {"silver_events": "bronze_events", "silver_customers": "bronze_customers",
                 "gold_hourly_revenue": "silver_events", "gold_customer_ltv": "silver_events",
                 "gold_user_sessions": "silver_events"}  # fmt: skip


def counts(lh: Lakehouse) -> dict[str, int]:
    return {t: lh.table(t).count() if (Path(lh.paths.table(t)) / "_delta_log").exists() else 0 for t in ALL_TABLES}


def figures(result) -> dict[str, dict]:
    return {
        m.asset_key.to_user_string(): {k: v.value for k, v in m.materialization.metadata.items()}
        for m in result.get_asset_materialization_events()
    }


def log_lines(lh: Lakehouse, result) -> list[str]:
    return [e.user_message for e in lh.instance.all_logs(result.run_id) if e.user_message]


def landed_lines(files: list[Path], source: str) -> tuple[int, int]:
    """All lines and blank lines of the newly landed files of ``source``."""
    lines = [line for f in files if f.parent.name == source for line in file_lines(f)]
    return len(lines), sum(is_blank(line) for line in lines)


@pytest.fixture(scope="module")
def rounds(module_lakehouse: Lakehouse) -> dict:
    lh = module_lakehouse
    before = counts(lh)
    files_one = generate(lh.paths, GeneratorOptions(files=2, rows=150, seed=11, start=START))
    first = lh.materialize()
    after_one = counts(lh)
    idle = lh.materialize()
    files_two = generate(lh.paths, GeneratorOptions(files=2, rows=150, seed=12, start=START + timedelta(hours=2)))
    spans: list[timings.Span] = []
    stop_listening = timings.add_listener(spans.append)
    try:
        second = lh.materialize()
    finally:
        stop_listening()
    return {"lh": lh, "runs": {"first": (first, files_one, before, after_one),
                               "second": (second, files_two, after_one, counts(lh))},
            "idle": idle, "after_one": after_one, "spans": spans}  # fmt: skip


@pytest.mark.parametrize("run", ["first", "second"])
def test_every_tables_figures_add_up_and_match_its_log(rounds: dict, run: str) -> None:
    lh = rounds["lh"]
    result, _, _, _ = rounds["runs"][run]
    lines = log_lines(lh, result)
    read_in_batches: dict[str, int] = {}
    for line in lines:
        if m := BATCH.match(line):
            read_in_batches[m[1]] = read_in_batches.get(m[1], 0) + int(m[2])
    summaries = {m[1]: tuple(int(x) for x in m.groups()[1:]) for line in lines if (m := SUMMARY.match(line))}
    for table in (t for t in ALL_TABLES if not t.endswith("_quarantine")):
        meta = figures(result)[table]
        if meta.get("change") == NO_CHANGE:
            assert read_in_batches.get(table, 0) == 0, table
            continue
        dropped = sum(meta[k] for k in DROPPED_KINDS)
        assert meta["rows_dropped"] == dropped, table
        assert (
            meta["rows_read"] == meta["rows_written"] + meta["rows_quarantined"] + dropped + meta["reduced_by_function"]
        ), table
        assert meta["rows_read"] == read_in_batches.get(table, 0), (table, meta)
        assert summaries[table] == (meta["rows_read"], meta["rows_written"], meta["rows_quarantined"], dropped), table


@pytest.mark.parametrize("run", ["first", "second"])
def test_figures_are_what_the_tables_gained(rounds: dict, run: str) -> None:
    result, files, before, after = rounds["runs"][run]
    meta = figures(result)
    gained = {t: after[t] - before[t] for t in after}
    for table, source in JSON_LANDING.items():
        lines, blank = landed_lines(files, source)
        assert meta[table]["rows_read"] == lines, table
        assert meta[table]["reduced_by_function"] == blank, table
        assert meta[table]["rows_written"] == gained[table], table
        assert meta[table]["rows_quarantined"] == gained[f"{table}_quarantine"], table
    customers = meta["bronze_customers"]
    assert customers["rows_read"] == gained["bronze_customers"] + gained["bronze_customers_quarantine"]
    for table, upstream in STREAMED_FROM.items():
        assert meta[table]["rows_read"] == gained[upstream], table
    # silver_events merges on event_id: a re-delivered event passes its expectations and is
    # then found already present. What is left of bronze's new rows after the quarantine and
    # the new silver rows is exactly what the run calls duplicates.
    silver = meta["silver_events"]
    assert silver["rows_written"] == gained["silver_events"]
    assert silver["rows_quarantined"] == gained["silver_events_quarantine"]
    assert (
        silver["dropped_duplicates"]
        == gained["bronze_events"]
        - gained["silver_events"]
        - gained["silver_events_quarantine"]
        - silver["dropped_expectations"]
    )
    assert silver["dropped_duplicates"] > 0  # the generator re-delivers 3% of the events
    assert meta["gold_user_sessions"]["rows_written"] == gained["gold_user_sessions"]


def test_a_run_without_new_data_records_no_figures_over_the_last_real_ones(rounds: dict) -> None:
    lh = rounds["lh"]
    first, idle = figures(rounds["runs"]["first"][0]), figures(rounds["idle"])
    for table in ALL_TABLES:
        meta = idle[table]
        assert meta.get("change") == NO_CHANGE, (table, meta)
        assert not any(k.startswith(("rows_", "dropped_")) for k in meta), (table, meta)
        # The content figures stay those of the table, which the idle run did not change.
        assert meta["dagster/row_count"] == rounds["after_one"][table] == first[table]["dagster/row_count"], table
        assert meta["delta_version"] == first[table]["delta_version"], table
    # Dagster's plots of a figure see only the runs that did something.
    history = lh.instance.fetch_materializations(dg.AssetKey("silver_events"), limit=10).records
    plotted = [
        r.asset_materialization.metadata["rows_read"].value
        for r in history
        if "rows_read" in r.asset_materialization.metadata
    ]
    assert len(plotted) == 2 and all(n > 0 for n in plotted)


def test_the_timing_hook_reports_where_each_tables_step_went(rounds: dict) -> None:
    """A listener of ``lakehouse_assets.lib.timings`` (what the bench uses) gets, for every table
    the run wrote, its previous state, its query inside its run, its metadata and its checks; the
    queries' progress counts the rows the table's figures say it read."""
    result = rounds["runs"]["second"][0]
    spans: list[timings.Span] = rounds["spans"]
    assert not timings.listening(), "the test's listener was not removed"
    checked = {e.asset_key.to_user_string() for e in result.get_asset_check_evaluations()}
    for table, meta in figures(result).items():
        if table.endswith("_quarantine"):
            continue
        mine = [s for s in spans if s.table == table]
        phases = {s.phase for s in mine}
        wanted = {"previous_state", "run_table"} | ({"metadata"} if "delta_version" in meta else set())
        assert wanted | ({"checks"} if table in checked else set()) <= phases, (table, phases)
        queries = [s for s in mine if s.phase == "query"]
        read = sum(p["numInputRows"] for s in queries for p in s.details["progress"])
        assert read == meta.get("rows_read", 0), (table, read, meta)
        run = next(s for s in mine if s.phase == "run_table")
        assert all(run.started <= q.started and q.seconds <= run.seconds for q in queries), table
    assert checked and any(s.phase == "query" for s in spans)
