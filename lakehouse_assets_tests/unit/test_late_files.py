"""The freshness sensor's listing of a landing folder: the files that arrived after a time, looking
at only the names after its last listing's mark, and at every file again when the names before
it do not add up or the time asked moves back. Every answer is checked against a stat of each
file made here. Spark-free."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lakehouse_assets.lib.engine.intake import late_files
from lakehouse_assets.lib.engine.intake.entries import Entry, object_entry
from lakehouse_assets.lib.engine.intake.late_files import LateFiles

pytestmark = pytest.mark.unit

GLOBS = ("*.jsonl",)


def land(folder: Path, name: str) -> None:
    (folder / f"_{name}").write_text("{}\n")
    os.rename(folder / f"_{name}", folder / name)


def expected(folder: Path, after_ns: int) -> dict[str, int]:
    """Every complete .jsonl file's arrival (its inode's change time) when after ``after_ns``."""
    found = {}
    for path in folder.iterdir():
        arrived = path.stat().st_ctime_ns
        if path.suffix == ".jsonl" and not path.name.startswith(("_", ".")) and arrived > after_ns:
            found[path.name] = arrived
    return found


def listed(late: LateFiles, folder: Path, after_ns: int) -> dict[str, int]:
    return {e.name: e.arrived_ns for e in late.files(str(folder), GLOBS, after_ns)}


def test_a_listing_looks_at_only_the_names_after_its_mark(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    for i in range(40):
        land(folder, f"ev-{i:04d}.jsonl")
    (folder / "notes.txt").write_text("not read")
    (folder / "_ev-9999.jsonl").write_text("{}\n")  # still being written
    late = LateFiles()

    assert listed(late, folder, -1) == expected(folder, -1)
    assert len(expected(folder, -1)) == 40
    assert late.looked_at == 41  # every complete entry, the first time

    held = sorted(expected(folder, -1).values())[29]  # a table holds the 30 oldest
    assert listed(late, folder, held) == expected(folder, held)
    assert late.looked_at == 41  # nothing new: nothing looked at

    land(folder, "ev-0040.jsonl")
    assert listed(late, folder, held) == expected(folder, held)
    assert "ev-0040.jsonl" in expected(folder, held)
    assert late.looked_at == 42  # the new name only

    held = expected(folder, -1)["ev-0040.jsonl"]  # caught up
    assert listed(late, folder, held) == {} == expected(folder, held)
    assert late.looked_at == 42


def test_names_added_or_removed_before_the_mark_and_a_time_moved_back_list_all_again(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    for i in range(20):
        land(folder, f"ev-{i:04d}.jsonl")
    late = LateFiles()
    held = sorted(expected(folder, -1).values())[-1]
    assert listed(late, folder, held) == {}
    looked = late.looked_at

    land(folder, "a-late.jsonl")  # a name sorting before every other: only a full listing finds it
    assert (
        listed(late, folder, held) == expected(folder, held) == {"a-late.jsonl": expected(folder, -1)["a-late.jsonl"]}
    )
    assert late.looked_at == looked + 21
    held = expected(folder, -1)["a-late.jsonl"]

    for i in range(5):  # retention archives the oldest files
        (folder / f"ev-{i:04d}.jsonl").unlink()
    land(folder, "ev-0020.jsonl")
    assert listed(late, folder, held) == expected(folder, held)
    assert list(expected(folder, held)) == ["ev-0020.jsonl"]

    assert listed(late, folder, -1) == expected(folder, -1)  # a full refresh: every file waits again
    assert len(expected(folder, -1)) == 17


def test_a_folder_not_there_has_no_late_files(tmp_path: Path) -> None:
    late = LateFiles()
    assert listed(late, tmp_path / "nowhere", -1) == {}
    (tmp_path / "nowhere").mkdir()
    land(tmp_path / "nowhere", "ev-1.jsonl")
    assert listed(late, tmp_path / "nowhere", -1) == expected(tmp_path / "nowhere", -1)


def test_a_listing_kept_under_a_state_folder_serves_the_next_process(tmp_path: Path) -> None:
    folder, state = tmp_path / "events", str(tmp_path / "state")
    folder.mkdir()
    for i in range(30):
        land(folder, f"ev-{i:04d}.jsonl")
    held = sorted(expected(folder, -1).values())[-1]
    first = LateFiles(state)
    assert listed(first, folder, held) == {}
    assert first.looked_at == 30

    land(folder, "ev-0030.jsonl")
    run = LateFiles(state)  # another process: a run's check
    assert listed(run, folder, held) == expected(folder, held)
    assert list(expected(folder, held)) == ["ev-0030.jsonl"]
    assert run.looked_at == 1

    for memo in Path(state).iterdir():
        memo.write_text("{not json")  # a torn or foreign file: list whole, then keep a new one
    broken = LateFiles(state)
    assert listed(broken, folder, held) == expected(folder, held)
    assert broken.looked_at == 31
    assert listed(LateFiles(state), folder, held) == expected(folder, held)


def test_a_swap_before_the_mark_a_replaced_file_and_a_link_made_a_file_are_all_found(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    for i in range(10):
        land(folder, f"ev-{i:04d}.jsonl")
    (folder / "ev-0009b.jsonl").symlink_to(folder / "ev-0000.jsonl")  # refused: links are not read
    late = LateFiles()
    held = sorted(expected(folder, -1).values())[-1]
    assert listed(late, folder, held) == {}

    (folder / "ev-0001.jsonl").unlink()  # retention takes one out while one lands before the mark:
    land(folder, "a-late.jsonl")  # as many names as before
    assert (
        listed(late, folder, held) == expected(folder, held) == {"a-late.jsonl": expected(folder, -1)["a-late.jsonl"]}
    )
    held = expected(folder, -1)["a-late.jsonl"]

    land(folder, "ev-0005.jsonl")  # landed again under a name already seen
    assert listed(late, folder, held) == expected(folder, held)
    assert list(expected(folder, held)) == ["ev-0005.jsonl"]
    held = expected(folder, -1)["ev-0005.jsonl"]

    (folder / "ev-0009b.jsonl").unlink()  # the link replaced by a file of its own
    land(folder, "ev-0009b.jsonl")
    assert listed(late, folder, held) == expected(folder, held)
    assert list(expected(folder, held)) == ["ev-0009b.jsonl"]


class Bucket:
    """Objects by name with their upload time, listed whole or from a name (or, like some stores,
    whole whatever start-after says); counts the listings of each kind."""

    def __init__(self, ignores_start_after: bool = False) -> None:
        self.objects: dict[str, int] = {}
        self.whole = self.after = 0
        self.ignores_start_after = ignores_start_after

    def entries(self, after: str | None = None) -> list[Entry]:
        names = sorted(n for n in self.objects if after is None or self.ignores_start_after or n > after)
        return [object_entry(n, False, self.objects[n], 1, ["*.jsonl"]) for n in names]


@pytest.mark.parametrize("ignores_start_after", [False, True])
def test_a_bucket_folder_is_listed_from_its_mark_and_whole_every_few_minutes(
    monkeypatch: pytest.MonkeyPatch, ignores_start_after: bool
) -> None:
    bucket = Bucket(ignores_start_after)

    def whole(folder, globs):  # type: ignore[no-untyped-def]
        bucket.whole += 1
        return bucket.entries()

    def after(folder, globs, name):  # type: ignore[no-untyped-def]
        bucket.after += 1
        return bucket.entries(name)

    monkeypatch.setattr(late_files, "list_entries", whole)
    monkeypatch.setattr(late_files, "list_objects_after", after)
    monkeypatch.setattr(late_files, "FROM_MARK_MIN_FILES", 3)
    folder, late = "s3a://bucket/landing/events", LateFiles()

    def asked(after_ns: int) -> dict[str, int]:
        found = late.files(folder, GLOBS, after_ns)
        assert len({e.name for e in found}) == len(found), found  # each file once
        return {e.name: e.arrived_ns for e in found}

    def truth(after_ns: int) -> dict[str, int]:
        return {n: t for n, t in bucket.objects.items() if n.endswith(".jsonl") and t > after_ns}

    bucket.objects |= {f"ev-{i}.jsonl": 100 + i for i in range(5)} | {"notes.txt": 200}
    assert asked(-1) == truth(-1) and (bucket.whole, bucket.after) == (1, 0)
    bucket.objects["ev-7.jsonl"] = 107
    assert asked(102) == truth(102) == {"ev-3.jsonl": 103, "ev-4.jsonl": 104, "ev-7.jsonl": 107}
    assert asked(104) == truth(104) and (bucket.whole, bucket.after) == (1, 2)
    bucket.objects["ev-5.jsonl"] = 105  # before the mark, ev-7.jsonl: seen by the next whole listing
    assert asked(104) == {"ev-7.jsonl": 107}
    late._memos[(folder, GLOBS)].full_at -= late_files.OBJECTS_FULL_LISTING_S
    assert asked(104) == truth(104) == {"ev-5.jsonl": 105, "ev-7.jsonl": 107}
    assert asked(50) == truth(50) and bucket.whole == 3  # the time asked moved back: listed whole
