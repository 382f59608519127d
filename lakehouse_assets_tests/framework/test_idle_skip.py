"""Skipping a table's query when its one Delta input has no version it has not read yet, or its
one landing folder no complete file its checkpoint has not recorded."""

from __future__ import annotations

import gzip
import json
import traceback
from datetime import UTC, datetime

import dagster as dg
import pytest
from delta.tables import DeltaTable

from lakehouse_assets.defs.bronze.events import bronze_events
from lakehouse_assets.defs.gold.hourly_revenue import gold_hourly_revenue
from lakehouse_assets.defs.silver.events import silver_events
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.engine.reading.idle import idle_stream_input
from lakehouse_assets.lib.engine.reading.source_log import seen_files
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.spark.session import SparkResource
from verification.contract import assert_tables_match_landed_files
from verification.lakehouse import Lakehouse

EVENTS_CHAIN = ["bronze_events", "silver_events", "gold_hourly_revenue"]
TABLE_ID = "b295bf67-3c99-4a87-a5b7-1876c962fac7"


def offsets(**offset) -> list[str]:
    base = {"sourceVersion": 1, "reservoirId": TABLE_ID, "reservoirVersion": 5, "index": -1, "isStartingVersion": False}
    return ["v1", json.dumps({"batchWatermarkMs": 0}), json.dumps({**base, **offset})]


def test_idle_only_when_the_offset_is_past_the_latest_version_of_the_same_table() -> None:
    assert idle_stream_input(offsets(), True, 4, TABLE_ID)
    assert not idle_stream_input(offsets(), True, 5, TABLE_ID)  # version 5 not read yet
    assert not idle_stream_input(offsets(), False, 4, TABLE_ID)  # last batch not committed: replay it
    assert not idle_stream_input(offsets(), True, 4, "another-table")  # the table was replaced
    assert not idle_stream_input(offsets(index=3), True, 4, TABLE_ID)  # in the middle of a version
    assert not idle_stream_input(offsets(isStartingVersion=True), True, 4, TABLE_ID)
    assert not idle_stream_input(offsets()[:2], True, 4, TABLE_ID)  # no source
    assert not idle_stream_input([*offsets(), offsets()[2]], True, 4, TABLE_ID)  # two sources
    assert not idle_stream_input(["v1", "{}", "not json"], True, 4, TABLE_ID)
    assert not idle_stream_input(offsets(), True, None, TABLE_ID)


@pytest.mark.slow
def test_idle_queries_are_skipped_and_new_data_still_flows(lakehouse: Lakehouse) -> None:
    lh = lakehouse
    start = datetime(2026, 11, 20, 10, tzinfo=UTC)
    generate(lh.paths, GeneratorOptions(files=1, rows=60, seed=1, start=start), ["events"])
    assert lh.materialize(EVENTS_CHAIN).success
    versions = {t: DeltaTable.forPath(lh.spark, lh.paths.table(t)).history(1).first()["version"] for t in EVENTS_CHAIN}

    messages: list[str] = []
    for table in (silver_events, gold_hourly_revenue):
        assert run_table(lh.spark, lh.paths, table, log=messages.append).batches == 0
    assert sum("query not started" in m for m in messages) == 2, messages
    for t, v in versions.items():
        assert DeltaTable.forPath(lh.spark, lh.paths.table(t)).history(1).first()["version"] == v

    generate(lh.paths, GeneratorOptions(files=1, rows=60, seed=2, start=start, late=0.3), ["events"])
    result = lh.materialize(EVENTS_CHAIN)
    assert result.success
    read = {
        m.asset_key.path[-1]: m.materialization.metadata["rows_read"].value
        for m in result.get_asset_materialization_events()
        if "rows_read" in m.materialization.metadata
    }
    assert read["silver_events"] > 0 and read["gold_hourly_revenue"] > 0
    assert_tables_match_landed_files(lh)


def test_the_files_a_file_source_has_recorded() -> None:
    compact = 'v1\n{"path":"file:///r/landing/events/a.jsonl","timestamp":1,"batchId":0}\n{"path":"file:///r/landing/events/b.jsonl","timestamp":2,"batchId":1}'
    later = 'v1\n{"path":"s3a://bucket/r/landing/events/c.jsonl","timestamp":3,"batchId":2}'
    assert seen_files([("9.compact", compact), ("10", later)]) == {"a.jsonl", "b.jsonl", "c.jsonl"}
    assert seen_files([("0", "v1\nnot json")]) is None
    # Spark logs paths URL-encoded; the landing folder lists names as they are.
    assert seen_files([("0", 'v1\n{"path":"file:///x/a%20b+c.csv"}')]) == {"a b+c.csv"}
    assert seen_files([("0", 'v1\n{"no_path": 1}')]) is None


@pytest.mark.slow
def test_a_landing_folder_with_nothing_new_starts_no_query_and_a_new_file_still_flows(lakehouse: Lakehouse) -> None:
    lh = lakehouse
    start = datetime(2026, 11, 20, 10, tzinfo=UTC)
    generate(lh.paths, GeneratorOptions(files=2, rows=40, seed=5, start=start), ["events"])
    assert lh.materialize(["bronze_events"]).success
    version = DeltaTable.forPath(lh.spark, lh.paths.table("bronze_events")).history(1).first()["version"]
    folder = lh.root / "landing" / "events"
    (folder / "_still-writing.jsonl").write_text('{"event_id": "x"}\n')  # in progress: not new work
    (folder / "notes.txt").write_text("no glob matches this\n")

    messages: list[str] = []
    assert run_table(lh.spark, lh.paths, bronze_events, log=messages.append).batches == 0
    assert any("nothing new in landing/events" in m and "query not started" in m for m in messages), messages
    assert DeltaTable.forPath(lh.spark, lh.paths.table("bronze_events")).history(1).first()["version"] == version

    generate(lh.paths, GeneratorOptions(files=1, rows=40, seed=6, start=start), ["events"])
    messages.clear()
    report = run_table(lh.spark, lh.paths, bronze_events, log=messages.append)
    assert report.batches == 1 and report.rows_read > 0, messages
    assert not any("query not started" in m for m in messages)


STARTED: list[str] = []  # a line per session a run of CountedSpark created


class CountedSpark(SparkResource):
    """The framework's Spark resource, noting each session it creates (it is this process's)."""

    def _init_session(self) -> None:
        if self._spark_session is None:
            STARTED.append("".join(traceback.format_stack(limit=8)))
            super()._init_session()


def test_a_run_that_finds_nothing_new_starts_no_session(lakehouse: Lakehouse) -> None:
    lh = lakehouse
    start = datetime(2026, 11, 20, 10, tzinfo=UTC)
    [landed] = generate(lh.paths, GeneratorOptions(files=1, rows=40, seed=3, start=start), ["events"])
    defs = lh.defs

    def run() -> None:
        assets = list(defs.assets or [])
        resources = {**defs.resources, "spark": CountedSpark(spark_config={})}
        assert dg.materialize(assets, resources=resources, instance=lh.instance, selection=EVENTS_CHAIN).success

    STARTED.clear()
    run()
    assert len(STARTED) == 1  # a new file: one session for the whole run
    with gzip.open(landed, "rt") if landed.suffix == ".gz" else landed.open() as file:
        lines = sum(1 for line in file if line.strip())  # blank lines carry nothing
    assert lh.table("bronze_events").count() + lh.table("bronze_events_quarantine").count() == lines
    STARTED.clear()
    run()
    assert not STARTED, STARTED[0]  # nothing new, checks included: no session, no JVM
    assert lh.table("bronze_events").count() + lh.table("bronze_events_quarantine").count() == lines
