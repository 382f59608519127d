"""A landing sensor's decision (skip, retry, watch, settle, request) from inputs made here: no
folder, no clock, no Dagster instance. Spark-free."""

from __future__ import annotations

import pytest

from lakehouse_assets.lib.engine.intake.cursor import LandedFile, LandingCursor, evaluate
from lakehouse_assets.lib.orchestrate.decide import (
    GoingRun,
    KnownRuns,
    Request,
    Retry,
    RetryPolicy,
    SensorSettings,
    Settle,
    Skip,
    Stranded,
    Tick,
    Watch,
    decide,
)
from lakehouse_assets.lib.orchestrate.landing import Listing

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0  # seconds since the epoch
S = 1_000_000_000  # ns a second
SETTINGS = SensorSettings(settle_s=0.5, settle_wait_s=1.0, max_settle_s=60, grace_s=600)
TICK = Tick(started=NOW, folder="/landing/events")
NO_RUNS = KnownRuns()


def landed(name: str, seconds_ago: float) -> LandedFile:
    return LandedFile(name, int((NOW - seconds_ago) * S), 10)


def seen(*files: LandedFile) -> LandingCursor:
    """A cursor that has handled ``files``."""
    return evaluate(files, LandingCursor(), SETTINGS.grace_s * S).next_cursor


def listing(*files: LandedFile, in_progress: int = 0) -> Listing:
    ordered = sorted(files, key=lambda f: (f.arrived_ns, f.name))
    return Listing(ordered, in_progress, stamp=int((NOW - 5) * S), started_ns=int(NOW * S))


def test_a_new_settled_file_is_requested_with_the_cursor_that_holds_it() -> None:
    old, new = landed("a.jsonl", 60), landed("b.jsonl", 10)
    decision = decide(listing(old, new), seen(old), NO_RUNS, NOW, SETTINGS, TICK, "events")
    assert isinstance(decision, Request)
    assert [f.name for f in decision.new] == ["b.jsonl"] and decision.unidentified == 0
    assert decision.next_cursor.hwm == new.arrived_ns and decision.next_cursor.n == 2
    assert decision.run_key.startswith(f"events:{new.arrived_ns}:2:")
    assert decision.what == "1 new file(s)"


def test_a_file_before_the_cursor_window_is_requested_as_unidentified() -> None:
    a = landed("a.jsonl", 60)
    cursor = LandingCursor(hwm=int((NOW + 3600) * S), recent={}, n=0)  # the clock was set back
    decision = decide(listing(a), cursor, NO_RUNS, NOW, SETTINGS, TICK, "events")
    assert isinstance(decision, Request) and decision.new == () and decision.unidentified == 1
    assert decision.what == "0 new file(s) and 1 arriving before the cursor window"


@pytest.mark.parametrize(
    ("files", "in_progress", "says"),
    [((), 0, "no complete files yet"), ((landed("a.jsonl", 60),), 2, "1 complete file(s), all seen")],
)
def test_nothing_new_skips_and_stamps_the_cursor_with_the_quiet_listing(files, in_progress, says) -> None:
    cursor = seen(*files)
    decision = decide(listing(*files, in_progress=in_progress), cursor, NO_RUNS, NOW + 0.012, SETTINGS, TICK)
    assert isinstance(decision, Skip)
    assert decision.message.startswith(f"No new files in /landing/events ({says}")
    assert ("2 in-progress name(s) ignored" in decision.message) == bool(in_progress)
    assert decision.message.endswith("; tick 12 ms).")
    assert decision.cursor is not None and decision.cursor.stamp == int((NOW - 5) * S)
    assert decision.cursor.listed_at == int(NOW * S) and decision.cursor.hwm == cursor.hwm


def test_a_folder_not_listed_since_a_quiet_listing_skips_without_moving_the_cursor() -> None:
    cursor = seen(landed("a.jsonl", 60))
    decision = decide(None, cursor, NO_RUNS, NOW, SETTINGS, TICK)
    assert isinstance(decision, Skip) and decision.cursor is None
    assert "unchanged since a listing that found nothing new" in decision.message


def test_a_tick_with_time_left_watches_until_its_cut() -> None:
    settings = SensorSettings(settle_s=1.0, settle_wait_s=1.0, watch_s=10.0)
    assert settings.watch_cut_s == 3.0  # the 4 s budget less the longest settle wait
    decision = decide(listing(), LandingCursor(), NO_RUNS, NOW, settings, TICK)
    assert isinstance(decision, Watch) and decision.poll_s == 0.25 and decision.cursor is not None
    late = Tick(started=NOW - 2.8, folder="/landing/events", polls=11)
    assert isinstance(decide(listing(), LandingCursor(), NO_RUNS, NOW, settings, late), Skip)


def test_new_files_behind_a_going_run_watch_then_wait_for_it() -> None:
    new = landed("b.jsonl", 10)
    runs = KnownRuns(going=GoingRun("0123456789abcdef", "ingest_events", "STARTED"))
    watching = SensorSettings(settle_s=0, watch_s=1.0)
    decision = decide(listing(new), LandingCursor(), runs, NOW, watching, TICK)
    assert isinstance(decision, Watch) and decision.cursor is None  # nothing stored while waiting
    done = Tick(started=NOW - 0.9, folder="/landing/events", polls=3)
    decision = decide(listing(new), LandingCursor(), runs, NOW, watching, done)
    assert isinstance(decision, Skip) and decision.cursor is None
    assert decision.message.startswith("1 new file(s) waiting: run 01234567 of ingest_events is STARTED.")


def test_new_files_behind_a_run_past_its_reading_start_the_next_run_now() -> None:
    new = landed("b.jsonl", 10)
    past = KnownRuns(going=GoingRun("0123456789abcdef", "ingest_events", "STARTED", past_reading=True))
    decision = decide(listing(new), LandingCursor(), past, NOW, SETTINGS, TICK)
    assert isinstance(decision, Request) and [f.name for f in decision.new] == ["b.jsonl"]
    # Nothing new behind it: the going run is no reason to ask again (no stranded-run retry).
    assert isinstance(decide(listing(), LandingCursor(), past, NOW, SETTINGS, TICK), Skip)


def test_a_file_still_landing_is_waited_for_in_the_tick_once() -> None:
    new = landed("b.jsonl", 0.2)
    decision = decide(listing(new), LandingCursor(), NO_RUNS, NOW, SETTINGS, TICK)
    assert isinstance(decision, Settle) and decision.wait_s == pytest.approx(0.3)
    waited = Tick(started=NOW, folder="/landing/events", settled=True)
    decision = decide(listing(new), LandingCursor(), NO_RUNS, NOW, SETTINGS, waited)
    assert isinstance(decision, Skip) and "waiting 0.5s for the landing folder to settle" in decision.message
    assert "newest arrived 0.2s ago" in decision.message
    gone = decide(listing(), LandingCursor(), NO_RUNS, NOW, SETTINGS, waited)
    assert isinstance(gone, Skip) and "removed while settling" in gone.message


def test_a_settle_longer_than_the_ticks_wait_is_left_to_the_next_pass_and_a_trickle_is_not_starved() -> None:
    settings = SensorSettings(settle_s=2.0, settle_wait_s=1.0, max_settle_s=60)
    burst = [landed(f"burst-{i}.jsonl", 0.1) for i in range(5)]
    decision = decide(listing(*burst), LandingCursor(), NO_RUNS, NOW, settings, TICK)
    assert isinstance(decision, Skip) and decision.message.startswith("5 new file(s) waiting 2s")
    trickle = [landed("first.jsonl", 61), landed("newest.jsonl", 0.1)]
    assert isinstance(decide(listing(*trickle), LandingCursor(), NO_RUNS, NOW, settings, TICK), Request)


def test_a_run_that_ended_badly_is_retried_after_its_back_off() -> None:
    settings = SensorSettings(retry=RetryPolicy(first_s=10))
    cursor = seen(landed("a.jsonl", 60))
    failed = Stranded("fedcba9876543210", "ingest_events", "FAILURE", ended=NOW - 4, failures=2)
    decision = decide(listing(landed("a.jsonl", 60)), cursor, KnownRuns(stranded=failed), NOW, settings, TICK)
    assert isinstance(decision, Skip) and decision.cursor is not None  # the quiet listing is kept
    assert "run fedcba98 of ingest_events ended FAILURE (2 in a row)" in decision.message
    assert "another run 16s from now" in decision.message  # 10 s doubled, less the 4 s passed
    later = decide(None, cursor, KnownRuns(stranded=failed), NOW + 16, settings, TICK)
    assert later == Retry(failed)


def test_no_retry_while_a_run_is_going_nor_within_a_watch() -> None:
    failed = Stranded("fedcba9876543210", "ingest_events", "CANCELED", ended=NOW - 100, failures=1)
    going = GoingRun("0123456789abcdef", "ingest_events", "QUEUED")
    both = KnownRuns(going=going, stranded=failed)
    assert isinstance(decide(None, LandingCursor(), both, NOW, SETTINGS, TICK), Skip)
    polled = Tick(started=NOW, folder="/landing/events", polls=1)
    assert isinstance(decide(None, LandingCursor(), KnownRuns(stranded=failed), NOW, SETTINGS, polled), Skip)
