"""Helpers over runs: waiting for them, when each run's steps ran, and the events chain's exactness."""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from pathlib import Path

import dagster as dg

from lakehouse_assets.lib.paths import LakehousePaths
from verification.expected import ExpectedEvents, close

STEP_EVENTS = {dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE}


def step_intervals(instance: dg.DagsterInstance, run_ids: list[str]) -> dict[str, list[tuple[float, float, str]]]:
    """Per step (table), the [start, end] of each run's step."""
    intervals: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for run_id in run_ids:
        starts: dict[str, float] = {}
        for record in instance.all_logs(run_id, of_type=STEP_EVENTS):
            event = record.dagster_event
            assert event is not None
            if event.event_type == dg.DagsterEventType.STEP_START:
                starts[event.step_key] = record.timestamp
            else:
                intervals[event.step_key].append((starts[event.step_key], record.timestamp, run_id))
    return intervals


def overlapping_steps(intervals: dict[str, list[tuple[float, float, str]]]) -> list[str]:
    """Each case of two runs' steps of one table running at the same time, as a sentence."""
    found = []
    for step, spans in intervals.items():
        spans = sorted(spans)
        for (s1, e1, r1), (s2, e2, r2) in itertools.pairwise(spans):
            if e1 > s2:
                found.append(f"{step}: runs {r1[:8]} and {r2[:8]} ran at the same time ({s1}-{e1} vs {s2}-{e2})")
    return found


def assert_no_overlap(intervals: dict[str, list[tuple[float, float, str]]]) -> None:
    assert not (found := overlapping_steps(intervals)), found


def assert_events_exact(spark, root: Path, messages: list[tuple[str | None, str]] = ()) -> None:
    """The events chain holds exactly what the landed files (and Kafka ``messages``) hold."""
    paths = LakehousePaths(str(root))
    expected = ExpectedEvents(root, messages)
    bronze = spark.read.format("delta").load(paths.table("bronze_events")).count()
    quarantined = spark.read.format("delta").load(paths.table("bronze_events_quarantine"))
    if "_set_aside_reason" in quarantined.columns:  # a file set aside whole holds no line
        quarantined = quarantined.where("_set_aside_reason IS NULL")
    quarantine = quarantined.count()
    assert bronze == len(expected.bronze) and quarantine == len(expected.bad_lines)
    silver = spark.read.format("delta").load(paths.table("silver_events"))
    assert silver.count() == len(expected.silver)
    assert silver.select("event_id").distinct().count() == len(expected.silver)
    gold = {
        (r.window_start, r.category): (r.revenue, r.orders, r.buyers)
        for r in spark.read.format("delta").load(paths.table("gold_hourly_revenue")).collect()
    }
    want = expected.hourly_revenue()
    assert set(gold) == set(want)
    for key, (revenue, orders, buyers) in want.items():
        got = gold[key]
        assert close(got[0], revenue) and got[1:] == (orders, buyers), (key, got, want[key])


def wait_for(predicate, timeout: float, what: str, every: float = 1.0) -> None:
    """Poll ``predicate`` until it holds; a TimeoutError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
