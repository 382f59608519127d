"""A sensor's listing of a local landing folder stats only the names after its cursor's name
mark, and lists every entry when the names at or before the mark do not add up. Spark-free."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lakehouse_assets.lib.engine.intake import entries
from lakehouse_assets.lib.engine.intake.cursor import FULL_LISTING_S, LandingCursor, evaluate
from lakehouse_assets.lib.orchestrate import landing

pytestmark = pytest.mark.unit

GRACE_NS = 600 * 1_000_000_000
GLOBS = ["*.jsonl"]


def land(folder: Path, name: str) -> None:
    (folder / f"_{name}").write_text("{}\n")
    os.rename(folder / f"_{name}", folder / name)


@pytest.fixture
def stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names the listings look at one by one."""
    looked: list[str] = []
    real = landing.local_entry

    def counted(entry, *args):
        looked.append(entry.name)
        return real(entry, *args)

    monkeypatch.setattr(landing, "local_entry", counted)
    monkeypatch.setattr(entries, "local_entry", counted)  # a full listing's
    return looked


def handled(folder: Path, cursor: LandingCursor | None = None) -> tuple[landing.Listing, LandingCursor]:
    """A listing, and the cursor a sensor stores once it has asked for its new files."""
    listing = landing.scan(folder, GLOBS, cursor)
    result = evaluate(listing.files, cursor or LandingCursor(), GRACE_NS, listing.old)
    return listing, listing.marked(result.next_cursor)


def test_names_after_the_mark_are_the_only_ones_looked_at(tmp_path: Path, stats: list[str]) -> None:
    for i in range(20):
        land(tmp_path, f"ev-{i:04d}.jsonl")
    (tmp_path / "notes.txt").write_text("not data\n")
    (tmp_path / "_set_aside").mkdir()
    first, cursor = handled(tmp_path)
    assert len(stats) == 21 and first.count == 20 and first.not_read == ("notes.txt",)
    assert cursor.mark == "notes.txt" and cursor.below == 21 and cursor.skipped == ("notes.txt",)
    # Only recent names and "notes.txt" are kept: the cursor's own round trip keeps the mark.
    assert LandingCursor.load(cursor.dump()) == cursor
    stats.clear()
    land(tmp_path, "zz-0001.jsonl")
    listing = landing.scan(tmp_path, GLOBS, cursor)
    assert stats == ["zz-0001.jsonl"]  # one stat, whatever the folder holds
    assert listing.count == 21 and listing.not_read == ("notes.txt",) and listing.in_progress == 1
    result = evaluate(listing.files, cursor, GRACE_NS, listing.old)
    assert [f.name for f in result.new] == ["zz-0001.jsonl"] and result.unidentified == 0
    assert result.next_cursor.n == 21 and listing.mark == "zz-0001.jsonl" and listing.below == 22


def test_old_names_are_counted_not_named_and_a_removed_recent_name_is_not_new(tmp_path: Path, stats) -> None:
    for i in range(10):
        land(tmp_path, f"ev-{i:04d}.jsonl")
    _, cursor = handled(tmp_path)
    # A year on: the history has left the grace window; only the newest name is recent.
    cursor = LandingCursor(**{**cursor.__dict__, "recent": {"ev-0009.jsonl": cursor.recent["ev-0009.jsonl"]}})
    (tmp_path / "ev-0009.jsonl").unlink()  # archived
    stats.clear()
    land(tmp_path, "ev-0010.jsonl")
    listing = landing.scan(tmp_path, GLOBS, cursor)
    assert stats == ["ev-0010.jsonl"] and listing.old == 9 and [f.name for f in listing.files] == ["ev-0010.jsonl"]
    result = evaluate(listing.files, cursor, GRACE_NS, listing.old)
    assert [f.name for f in result.new] == ["ev-0010.jsonl"] and result.next_cursor.n == 10


def test_a_name_landing_before_the_mark_makes_the_listing_look_at_every_entry(tmp_path: Path, stats) -> None:
    for i in range(10):
        land(tmp_path, f"ev-{i:04d}.jsonl")
    _, cursor = handled(tmp_path)
    stats.clear()
    land(tmp_path, "a-late.jsonl")  # a producer whose names do not sort by time
    listing = landing.scan(tmp_path, GLOBS, cursor)
    assert len(stats) == 11 and listing.old == 0
    result = evaluate(listing.files, cursor, GRACE_NS, listing.old)
    assert [f.name for f in result.new] == ["a-late.jsonl"]
    assert listing.mark == "ev-0009.jsonl" and listing.below == 11


def test_every_entry_is_looked_at_again_after_the_full_listing_period(tmp_path: Path, stats) -> None:
    for i in range(5):
        land(tmp_path, f"ev-{i:04d}.jsonl")
    _, cursor = handled(tmp_path)
    stale = LandingCursor(**{**cursor.__dict__, "full_at": time.time_ns() - (FULL_LISTING_S + 1) * 1_000_000_000})
    stats.clear()
    listing = landing.scan(tmp_path, GLOBS, stale)
    assert len(stats) == 5 and listing.full_at > stale.full_at
    stats.clear()
    landing.scan(tmp_path, GLOBS, cursor)
    assert stats == []


def test_a_cursor_without_mark_looks_at_every_entry(tmp_path: Path, stats) -> None:
    land(tmp_path, "ev-0001.jsonl")
    listing = landing.scan(tmp_path, GLOBS, LandingCursor())
    assert stats == ["ev-0001.jsonl"] and listing.mark == "ev-0001.jsonl"
    assert LandingCursor().dump() == LandingCursor.load(LandingCursor().dump()).dump()
    assert "mark" not in LandingCursor().dump()  # the intake's cursors are unchanged
