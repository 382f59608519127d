"""The intake's pure parts, without Spark: the bounded reader, the entries of a folder as data,
the column bound, retention and the names a retaken file gets."""

from __future__ import annotations

import bz2
import gzip
import io
import os
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lakehouse_assets.lib.declare.inputs import landing
from lakehouse_assets.lib.engine.intake.bounds import Limits, needs_reading, vet_stream
from lakehouse_assets.lib.engine.intake.cursor import LandingCursor
from lakehouse_assets.lib.engine.intake.entries import list_local
from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger, IntakeState
from lakehouse_assets.lib.engine.intake.retention import clean, prune_archive
from lakehouse_assets.lib.engine.intake.set_aside import finish_moves, retaken_name, set_aside, take_back
from lakehouse_assets.lib.engine.intake.width import beyond_width
from lakehouse_assets.lib.errors import DeclarationError, LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths

pytestmark = pytest.mark.unit
LIMITS = Limits(max_file_bytes=10 << 20, max_line_bytes=1 << 20, max_columns=5)


def vetted(name: str, data: bytes, limits: Limits = LIMITS) -> str | None:
    return vet_stream(name, io.BytesIO(data), limits)


def test_the_bounded_reader_finds_long_lines_across_chunks_and_stops_early() -> None:
    line = b"y" * ((1 << 20) - 10)
    assert vetted("ok.json", (line + b"\n") * 5) is None
    assert "line longer than 1 MiB" in vetted("long.json", b"a\n" + b"x" * ((1 << 20) + 1) + b"\nb\n")
    # A line that grows over many chunks without a newline, and one split exactly at a chunk end.
    assert "line longer" in vetted("endless.json", b"z" * (3 << 20))
    assert vetted("edge.json", b"q" * (1 << 20) + b"\n" + b"r" * (1 << 20)) is None
    assert "more than 10 MiB" in vetted("big.json", (b"w" * 1000 + b"\n") * 11_000)


def test_archives_are_read_decompressed_and_broken_ones_are_named() -> None:
    bomb = gzip.compress(b"x" * (64 << 20), compresslevel=9)
    assert len(bomb) < 100_000
    assert "line longer than 1 MiB" in vetted("bomb.json.gz", bomb)
    assert "more than 10 MiB" in vetted("many.json.gz", gzip.compress(b"line\n" * (3 << 20)))
    assert vetted("fine.json.bz2", bz2.compress(b'{"a": 1}\n' * 1000)) is None
    assert vetted("fine.json.deflate", zlib.compress(b'{"a": 1}\n' * 1000)) is None
    assert "line longer" in vetted("wide.json.deflate", zlib.compress(b"x" * (2 << 20)))
    # Hadoop ends a line at \r too: old Mac line ends are many short lines, not one long one.
    assert vetted("cr.json", b'{"a": 1}\r' * 300_000) is None
    lines = gzip.compress(b'{"a": 1}\n' * 100_000)
    assert "not a readable gzip file" in vetted("cut.json.gz", lines[: len(lines) // 2])
    assert "not a readable gzip file" in vetted("fake.json.gz", b"not gzip at all")
    # Columnar formats have no lines: only their size counts.
    assert vetted("one.parquet", b"p" * (3 << 20), Limits(10 << 20, 1 << 20, 5, line_format=False)) is None


def test_only_files_whose_size_cannot_tell_are_read() -> None:
    assert not needs_reading("small.json", 1000, LIMITS)
    assert needs_reading("large.json", 2 << 20, LIMITS)
    assert needs_reading("tiny.json.gz", 500, LIMITS), "an archive is always read: a truncated one costs little now"


def test_entries_are_data_links_loops_and_odd_names_refused(tmp_path: Path) -> None:
    folder = tmp_path / "landing"
    folder.mkdir()
    (folder / "a.json").write_text("{}\n")
    (folder / "ev*.json").write_text("{}\n")
    (folder / "ev 100%.json").write_text("{}\n")
    (folder / "loop.json").symlink_to("loop.json")
    (tmp_path / "secret.txt").write_text("s\n")
    (folder / "link.json").symlink_to(tmp_path / "secret.txt")
    (folder / "inside.json").symlink_to(folder / "a.raw")  # its target is no file the glob reads
    (folder / "a.raw").write_text("{}\n")
    (folder / "twice.json").symlink_to(folder / "a.json")
    (folder / "dir.json").mkdir()
    (folder / "notes.txt").write_text("x")
    (folder / "_writing.json").write_text("{}")
    os.mkfifo(folder / "pipe.json")
    kinds = {e.name: (e.kind, e.problem or "") for e in list_local(folder, ["*.json"])}
    assert kinds["a.json"] == ("file", "") and kinds["ev 100%.json"] == ("file", "")
    assert kinds["ev*.json"][0] == "refused" and "pattern" in kinds["ev*.json"][1]
    assert kinds["loop.json"][0] == "refused" and "loop" in kinds["loop.json"][1]
    assert kinds["link.json"][0] == "refused" and "symbolic link" in kinds["link.json"][1]
    assert kinds["pipe.json"][0] == "refused" and "not a regular file" in kinds["pipe.json"][1]
    assert kinds["dir.json"][0] == "folder" and kinds["notes.txt"][0] == "unmatched"
    assert kinds["_writing.json"][0] == "in_progress"
    inside = {e.name: e for e in list_local(folder, ["*.json"], links_inside=True)}
    assert inside["inside.json"].kind == "file" and inside["link.json"].kind == "refused"
    assert inside["twice.json"].kind == "refused" and "read itself" in (inside["twice.json"].problem or "")


def test_a_file_past_the_column_bound_is_refused_and_the_rest_kept() -> None:
    columns = {"f1": {"a": 1, "b": 1}, "f2": {"c": 1, "d": 1}, "f3": {"e": 1, "f": 1}, "f4": {"A": 1}}
    refused = beyond_width(["f1", "f2", "f3", "f4"], lambda n: columns[n], ["z"], 5)
    assert list(refused) == ["f3"] and "7 columns wide, over 5" in refused["f3"]
    assert beyond_width(["wide"], lambda n: {"nested": 9}, [], 5)


def test_set_aside_and_taken_back_under_a_name_the_glob_matches(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    (folder / "events-1.json").write_text("{}\n")
    ledger, said = IntakeLedger(str(tmp_path / "intake")), []
    set_aside(str(folder), ledger, "events-1.json", 3, "it holds a line too long", True, said.append)
    assert not (folder / "events-1.json").exists() and (folder / "_set_aside" / "events-1.json").exists()
    assert "set aside landed file events-1.json (3 bytes): it holds a line too long" in said[0]
    assert [r.state for r in IntakeLedger(str(tmp_path / "intake")).records()] == ["moved"]
    moved = take_back(str(folder), ledger, ["events-*.json"], None, said.append)
    assert moved == ["events-1.retaken-1.json"] and (folder / "events-1.retaken-1.json").exists()
    assert ledger.held() == []
    assert retaken_name("a.json.gz", 2, ["*.json.gz"], set()) == "a.retaken-2.json.gz"
    assert retaken_name("noext", 4, ["*"], set()) == "noext-retaken-4"
    with pytest.raises(LakehouseError, match="glob"):
        retaken_name("a.json", 1, ["a.json"], set())


def test_a_move_recorded_but_not_made_is_made_at_the_next_start(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    (folder / "x.json").write_text("{}\n")
    ledger = IntakeLedger(str(tmp_path / "intake"))
    ledger.add("x.json", 3, "why", False, set())  # killed here: recorded, not moved
    finish_moves(str(folder), IntakeLedger(str(tmp_path / "intake")))
    assert (folder / "_set_aside" / "x.json").exists() and not (folder / "x.json").exists()


def test_retention_cleans_committed_names_only_and_never_a_planned_one(tmp_path: Path) -> None:
    paths = LakehousePaths(str(tmp_path))
    folder = tmp_path / "landing" / "events"
    folder.mkdir(parents=True)
    for name in ("a.json", "b.json", "planned.json", "new.json"):
        (folder / name).write_text("{}\n")
    ledger, now = IntakeLedger(str(tmp_path / "intake")), datetime(2026, 11, 27, 12, tzinfo=UTC)
    archive = landing("events", clean_source="archive", retention="2 days")
    state = IntakeState(committed=["a.json", "b.json", "planned.json"])
    done = clean("t", paths, archive, str(folder), ledger, state, {"planned.json"}, lambda _: None, now=now)
    assert done == {"a.json", "b.json"} and state.committed == ["planned.json"]
    assert sorted(p.name for p in (tmp_path / "archive/events/2026/11/27").iterdir()) == ["a.json", "b.json"]
    assert sorted(p.name for p in folder.iterdir()) == ["new.json", "planned.json"], "a file not committed was moved"
    # Killed after the moves, before the state said so: cleaning again finds them gone, and goes on.
    again = IntakeState(committed=["a.json"])
    assert clean("t", paths, archive, str(folder), ledger, again, set(), lambda _: None, now=now) == {"a.json"}
    (tmp_path / "archive/events/2026/11/20").mkdir(parents=True)
    assert prune_archive(str(tmp_path / "archive/events"), now - timedelta(days=2), lambda _: None) == 1
    assert (tmp_path / "archive/events/2026/11/27").exists()
    delete = landing("events", clean_source="delete", retention="1 day")
    kept = clean("t", paths, delete, str(folder), ledger, IntakeState(committed=["new.json"]), set(), print, now=now)
    assert kept == set() and (folder / "new.json").exists() and ledger.commit_days() == ["2026-11-27"]
    later = now + timedelta(days=2)
    assert clean("t", paths, delete, str(folder), ledger, IntakeState(), set(), print, now=later) == {"new.json"}
    assert not (folder / "new.json").exists() and ledger.commit_days() == []


def test_retention_is_declared_in_words() -> None:
    assert landing("events", clean_source="delete").retention == "7 days"
    with pytest.raises(DeclarationError, match="duration"):
        landing("events", clean_source="archive", retention="soon")
    with pytest.raises(DeclarationError, match="archive_path needs"):
        landing("events", archive_path="/elsewhere")
    with pytest.raises(DeclarationError, match="max_line_bytes"):
        landing("events", max_line_bytes=0)


def test_the_ledger_keeps_what_it_is_given(tmp_path: Path) -> None:
    ledger = IntakeLedger(str(tmp_path / "intake"))
    state = ledger.load()
    state.cursor = LandingCursor(hwm=5, recent={"a.json": 5}, n=1)
    state.drained, state.attempts, state.unexamined = "d", {"b.json": 1}, ["a.json"]
    ledger.save(state)
    assert IntakeLedger(str(tmp_path / "intake")).load() == state


def test_a_run_leaves_no_list_that_grows_with_every_file(tmp_path: Path) -> None:
    """What the intake admits is examined once (schema evolution clears it), committed at the
    end of the run, cleaned at the next: none of the ledger's lists outlives a run."""
    from lakehouse_assets.lib.declare.table import streaming_table
    from lakehouse_assets.lib.engine.intake.lifecycle import admit, finish
    from lakehouse_assets.lib.engine.report import RunReport

    @streaming_table(group="raw", inputs={"rows": landing("meters", format="json", clean_source="archive")})
    def meters(rows):  # never run
        return rows

    paths = LakehousePaths(str(tmp_path))
    folder = tmp_path / "landing" / "meters"
    folder.mkdir(parents=True)
    flow = meters.flow_runs()[0]
    for i in range(3):
        (folder / f"m{i}.json").write_text('{"a": 1}\n')
        intakes = admit(None, paths, flow, RunReport("meters"), print)  # type: ignore[arg-type] - no Spark job
        state = intakes[0].ledger.load()
        assert state.unexamined == [f"m{i}.json"] and state.admitted == [f"m{i}.json"]
        state.unexamined = []  # what schema evolution does once it looked at them
        intakes[0].ledger.save(state)
        finish(None, paths, flow, intakes)  # type: ignore[arg-type]
        after = intakes[0].ledger.load()
        assert after.unexamined == [] and after.admitted == [] and after.committed == [f"m{i}.json"]
    assert sorted(p.name for p in folder.iterdir()) == ["m2.json"], "the committed files were archived"


def test_an_archived_file_never_replaces_a_namesake(tmp_path: Path) -> None:
    from lakehouse_assets.lib.engine.state.storage import move_beside

    landing, archive = tmp_path / "landing", tmp_path / "archive" / "2026" / "12" / "07"
    landing.mkdir()
    (landing / "a.json").write_text("first\n")
    assert move_beside(str(landing / "a.json"), str(archive / "a.json")) == str(archive / "a.json")
    (landing / "a.json").write_text("second, landed again under the name\n")
    assert move_beside(str(landing / "a.json"), str(archive / "a.json")) == str(archive / "1-a.json")
    # A move killed between its link and its unlink is finished, not archived twice.
    (landing / "b.json").write_text("b\n")
    os.link(landing / "b.json", archive / "b.json")
    assert move_beside(str(landing / "b.json"), str(archive / "b.json")) == str(archive / "b.json")
    assert sorted(p.name for p in archive.iterdir()) == ["1-a.json", "a.json", "b.json"]
    assert (archive / "a.json").read_text() == "first\n" and not list(landing.iterdir())
    with pytest.raises(FileNotFoundError):
        move_beside(str(landing / "b.json"), str(archive / "b.json"))


def test_an_archived_file_of_another_user_moves_by_rename(tmp_path: Path, monkeypatch) -> None:
    from lakehouse_assets.lib.engine.state import storage

    def refused(*_: object) -> None:
        raise PermissionError("Operation not permitted")  # fs.protected_hardlinks, not the owner

    landing, archive = tmp_path / "landing", tmp_path / "archive"
    landing.mkdir()
    archive.mkdir()
    (archive / "a.json").write_text("first\n")
    (landing / "a.json").write_text("second\n")
    monkeypatch.setattr(storage.os, "link", refused)
    assert storage.move_beside(str(landing / "a.json"), str(archive / "a.json")) == str(archive / "1-a.json")
    assert (archive / "a.json").read_text() == "first\n" and (archive / "1-a.json").read_text() == "second\n"
