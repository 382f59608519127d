"""A sensor's listing of a bucket folder from its cursor's name mark, over an in-memory bucket
(Spark-free, no server): each file requested once whatever sorts after the files, whatever a
store does with start-after; a file landed before the mark requested by the next whole listing,
after which the folder is listed whole for a day. Against S3Proxy:
lakehouse_assets_tests/scaleout/test_landing_sensor_s3.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lakehouse_assets.lib.engine.intake.cursor import LandingCursor
from lakehouse_assets.lib.engine.intake.entries import Entry, object_entry
from lakehouse_assets.lib.orchestrate import landing

pytestmark = pytest.mark.unit

FOLDER = "s3a://bucket/landing/events"
GLOBS = ["*.jsonl"]
GRACE_NS = 600 * 1_000_000_000
SMALL = 4  # FROM_MARK_MIN_FILES here: a bucket folder of this many files is listed from its mark


class Bucket:
    """Objects by name (common prefixes end in ``/``), each with its upload time; counts the
    whole listings and the listings from a name it is asked for."""

    def __init__(self, ignores_start_after: bool = False) -> None:
        self.objects: dict[str, int] = {}
        self.clock = 1_000_000_000_000
        self.whole = self.after = 0
        self.ignores_start_after = ignores_start_after

    def land(self, name: str, arrived_ns: int | None = None) -> None:
        self.clock += 1_000_000_000
        self.objects[name] = self.clock if arrived_ns is None else arrived_ns

    def entries(self, after: str | None = None) -> list[Entry]:
        names = sorted(n for n in self.objects if after is None or self.ignores_start_after or n.rstrip("/") > after)
        found = [object_entry(n.rstrip("/"), n.endswith("/"), self.objects[n], 1, GLOBS) for n in names]
        return found


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Bucket:
    store = Bucket()

    def whole(folder: str, globs) -> list[Entry]:  # type: ignore[no-untyped-def]
        store.whole += 1
        return store.entries()

    def after(folder: str, globs, name: str) -> list[Entry]:  # type: ignore[no-untyped-def]
        store.after += 1
        return store.entries(name)

    monkeypatch.setattr(landing, "list_entries", whole)
    monkeypatch.setattr(landing, "list_objects_after", after)
    monkeypatch.setattr(landing, "FROM_MARK_MIN_FILES", SMALL)
    return store


def tick(cursor: LandingCursor) -> tuple[set[str], int, LandingCursor]:
    """One tick as the sensor makes it: the new files, those beyond the cursor, the cursor kept."""
    listing = landing.scan(FOLDER, GLOBS, cursor)
    result = listing.evaluate(cursor, GRACE_NS)
    if result.has_work:
        return {f.name for f in result.new}, result.unidentified, listing.marked(result.next_cursor)
    return set(), 0, listing.stamped(replace(result.next_cursor, warned=cursor.warned))


def fill(bucket: Bucket, count: int) -> LandingCursor:
    for i in range(count):
        bucket.land(f"ev-{i:04d}.jsonl")
    new, _, cursor = tick(LandingCursor())
    assert len(new) == count
    return cursor


def test_each_file_is_requested_once_from_listings_after_the_mark(bucket: Bucket) -> None:
    cursor = fill(bucket, 6)
    for i in range(6, 12):
        bucket.land(f"ev-{i:04d}.jsonl")
        new, beyond, cursor = tick(cursor)
        assert (new, beyond) == ({f"ev-{i:04d}.jsonl"}, 0)
        assert tick(cursor)[:2] == (set(), 0)
    assert (bucket.whole, cursor.mark, cursor.below, cursor.n) == (1, "ev-0011.jsonl", 12, 12)
    whole = landing.scan(FOLDER, GLOBS, replace(cursor, full_at=0))  # the sum kept name by name holds
    assert whole.checked and not whole.doubt and whole.below_sum == cursor.below_sum


def test_a_small_folder_is_listed_whole_every_tick(bucket: Bucket) -> None:
    cursor = fill(bucket, SMALL - 1)
    bucket.land("ev-9999.jsonl")
    assert tick(cursor)[0] == {"ev-9999.jsonl"}
    assert (bucket.whole, bucket.after) == (2, 0)


def test_entries_sorting_after_the_files_hide_nothing_and_are_named_once(bucket: Bucket) -> None:
    bucket.land("zz-archive/")
    bucket.land("zz-notes.txt")
    cursor = fill(bucket, 5)
    assert (cursor.mark, cursor.skipped) == ("ev-0004.jsonl", ("zz-archive/", "zz-notes.txt"))
    for i in range(5, 8):
        bucket.land(f"ev-{i:04d}.jsonl")
        new, _, cursor = tick(cursor)
        assert new == {f"ev-{i:04d}.jsonl"}
        quiet = tick(cursor)[2]
        assert quiet.skipped == ("zz-archive/", "zz-notes.txt") and quiet.below == cursor.below
        cursor = quiet
    assert bucket.whole == 1
    listing = landing.scan(FOLDER, GLOBS, cursor)
    assert listing.not_read == ("zz-archive/", "zz-notes.txt") and listing.count == 8


def test_a_store_that_ignores_start_after_still_requests_each_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    store = Bucket(ignores_start_after=True)
    monkeypatch.setattr(landing, "list_entries", lambda folder, globs: store.entries())
    monkeypatch.setattr(landing, "list_objects_after", lambda folder, globs, name: store.entries(name))
    monkeypatch.setattr(landing, "FROM_MARK_MIN_FILES", SMALL)
    cursor = fill(store, 5)
    for i in range(5, 9):
        store.land(f"ev-{i:04d}.jsonl")
        new, beyond, cursor = tick(cursor)
        assert (new, beyond, cursor.n) == ({f"ev-{i:04d}.jsonl"}, 0, i + 1)
        assert tick(cursor)[:2] == (set(), 0)


def test_a_file_landed_before_the_mark_is_requested_by_the_next_whole_listing(bucket: Bucket) -> None:
    cursor = fill(bucket, 5)
    bucket.land("ev-0002b.jsonl")  # sorts before the mark, ev-0004.jsonl
    new, beyond, cursor = tick(cursor)
    assert (new, beyond, cursor.from_mark) == (set(), 0, True)  # a listing after the mark cannot see it
    cursor = replace(cursor, full_at=0)  # the whole listing of every FULL_LISTING_S is due
    new, _, cursor = tick(cursor)
    assert new == {"ev-0002b.jsonl"} and cursor.below_changed_at > 0
    bucket.land("ev-0001b.jsonl")  # the folder is now listed whole: seen at once
    assert tick(cursor)[0] == {"ev-0001b.jsonl"}
    assert (bucket.whole, bucket.after) == (3, 1)
    day_later = replace(cursor, below_changed_at=cursor.below_changed_at - landing.WHOLE_AFTER_CHANGE_S * 10**9)
    bucket.land("ev-0100.jsonl")
    assert tick(day_later)[0] == {"ev-0100.jsonl"}
    assert bucket.after == 2  # a day without one, the folder is listed from its mark again


@pytest.mark.parametrize("removed", [1, 2])
def test_a_slow_upload_hidden_by_removals_still_gets_a_run(bucket: Bucket, removed: int) -> None:
    """A slow upload's time is its start: it lands after later names did, with a time older than
    the cursor's window, while files the folder held are removed (one: the count is unchanged),
    so neither its time nor the count names it new: the whole listing requests a run all the same."""
    cursor = fill(bucket, 6)
    cursor = tick(cursor)[2]  # from the mark, nothing new
    for name in ("ev-0000.jsonl", "ev-0001.jsonl")[:removed]:
        del bucket.objects[name]
    bucket.land("ev-0003a.jsonl", arrived_ns=bucket.clock - 2 * GRACE_NS)
    assert tick(cursor)[:2] == (set(), 0)  # from the mark: nothing to see
    new, beyond, cursor = tick(replace(cursor, full_at=0))
    assert (new, beyond) == (set(), 1) and cursor.below_changed_at > 0
    assert (cursor.n, cursor.below) == (7 - removed, 7 - removed)
    assert tick(cursor)[:2] == (set(), 0)  # listed whole now: counted right, nothing more asked


def test_a_whole_listing_that_finds_nothing_changed_lets_a_waiting_tick_keep_its_time(bucket: Bucket) -> None:
    cursor = tick(fill(bucket, 6))[2]
    bucket.land("ev-0100.jsonl")
    listing = landing.scan(FOLDER, GLOBS, replace(cursor, full_at=0))
    assert listing.checked and not listing.doubt
    assert listing.checked_cursor(cursor) == replace(cursor, full_at=listing.full_at)
    del bucket.objects["ev-0003.jsonl"]
    assert landing.scan(FOLDER, GLOBS, replace(cursor, full_at=0)).checked_cursor(cursor) is None


def test_removals_seen_by_listings_that_are_all_whole_ask_for_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another store, or a start-after listing that fails: every tick lists whole, as before."""
    store = Bucket()
    monkeypatch.setattr(landing, "list_entries", lambda folder, globs: store.entries())
    monkeypatch.setattr(landing, "list_objects_after", lambda folder, globs, name: None)
    monkeypatch.setattr(landing, "FROM_MARK_MIN_FILES", SMALL)
    cursor = tick(fill(store, 6))[2]
    del store.objects["ev-0002.jsonl"]
    new, beyond, cursor = tick(replace(cursor, full_at=0))
    assert (new, beyond, cursor.n, cursor.below_changed_at) == (set(), 0, 5, 0)


def test_files_removed_between_whole_listings_get_one_run_and_whole_listings(bucket: Bucket) -> None:
    cursor = tick(fill(bucket, 6))[2]
    del bucket.objects["ev-0002.jsonl"]
    new, beyond, cursor = tick(replace(cursor, full_at=0))
    assert (new, beyond, cursor.n) == (set(), 1, 5)
    bucket.land("ev-0001a.jsonl", arrived_ns=bucket.clock - 2 * GRACE_NS)  # listed whole: the count shows it
    assert tick(cursor)[:2] == (set(), 1)
    assert bucket.after == 1
