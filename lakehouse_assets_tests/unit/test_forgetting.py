"""Spark's file-source log forgets cleaned files: a checkpoint laid out as Spark writes one
(``offsets/``, ``commits/``, ``sources/0/<n>.compact`` with its Hadoop ``.crc``), no Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakehouse_assets.lib.declare.inputs import landing
from lakehouse_assets.lib.engine.intake.forgetting import forget_cleaned
from lakehouse_assets.lib.engine.reading.source_log import in_folder
from lakehouse_assets.lib.errors import DeclarationError

pytestmark = pytest.mark.unit


def entry(folder: Path, name: str, batch: int) -> str:
    return json.dumps({"path": f"file://{folder}/{name.replace(' ', '%20')}", "timestamp": 1, "batchId": batch})


def checkpoint(tmp_path: Path, entries: list[tuple[str, int]], committed_offset: int, compact: int) -> Path:
    """A query checkpoint whose last committed micro-batch (1) saw the file source's log up to
    ``committed_offset``, and a planned one (2) up to ``compact``."""
    query, landing = tmp_path / "query", tmp_path / "landing"
    (query / "sources" / "0").mkdir(parents=True)
    (query / "offsets").mkdir()
    (query / "commits").mkdir()
    for batch, offset in ((1, committed_offset), (2, compact)):
        (query / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{{"logOffset":{offset}}}')
    (query / "commits" / "1").write_text("v1\n{}")
    log = query / "sources" / "0"
    (log / f"{compact}.compact").write_text("v1\n" + "\n".join(entry(landing, n, b) for n, b in entries))
    (log / f".{compact}.compact.crc").write_bytes(b"crc")
    return query


def names_in(query: Path, compact: int) -> list[str]:
    lines = (query / "sources" / "0" / f"{compact}.compact").read_text().splitlines()
    assert lines[0] == "v1"
    return [json.loads(line)["path"].rsplit("/", 1)[-1] for line in lines[1:]]


def logged_in(path: Path) -> list[str]:
    return [json.loads(line)["path"].rsplit("/", 1)[-1] for line in path.read_text().splitlines()[1:]]


def test_entries_of_cleaned_files_of_committed_batches_go_from_every_file_read_at_start(tmp_path: Path) -> None:
    logged = [("a.json", 0), ("b.json", 0), ("c%20d.json", 1), ("e.json", 2)]
    query = checkpoint(tmp_path, logged, committed_offset=3, compact=2)
    log, landing = query / "sources" / "0", tmp_path / "landing"
    (log / "3").write_text("v1\n" + "\n".join([entry(landing, "f.json", 3), entry(landing, "a.json", 3)]))
    (log / "4").write_text("v1\n" + entry(landing, "g.json", 4))  # planned, not committed: a replay reads it
    (log / "1").write_text("v1\n" + entry(landing, "a.json", 1))  # before the compact: Spark never reads it again
    # b and "c d" are still landed (Spark must keep knowing them); a, e, f and g are not.
    dropped = forget_cleaned(str(query), str(landing), {"b.json", "c d.json"})
    assert dropped == {"a.json", "e.json", "f.json"}
    assert names_in(query, 2) == ["b.json", "c%20d.json"]
    assert logged_in(log / "3") == [] and logged_in(log / "4") == ["g.json"] and logged_in(log / "1") == ["a.json"]
    assert not (log / ".2.compact.crc").exists()  # it no longer matches the file
    assert not (log / "2.compact").read_text().endswith("\n")  # as Spark writes it
    assert forget_cleaned(str(query), str(landing), {"b.json", "c d.json"}) == set()  # nothing left to forget


def test_a_log_of_another_folder_or_one_that_does_not_read_is_left_alone(tmp_path: Path) -> None:
    query = checkpoint(tmp_path, [("a.json", 0)], committed_offset=1, compact=1)
    before = (query / "sources" / "0" / "1.compact").read_text()
    assert forget_cleaned(str(query), str(tmp_path / "elsewhere"), set()) == set()
    (query / "sources" / "0" / "1.compact").write_text(before + "\nnot json")
    assert forget_cleaned(str(query), str(tmp_path / "landing"), set()) == set()
    assert (query / "sources" / "0" / ".1.compact.crc").exists()


def test_files_of_a_sub_folder_or_a_folder_sharing_its_name_s_end_are_not_retentions(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    logged = [("a.json", 0), ("sub/b.json", 0)]
    query = checkpoint(tmp_path, logged, committed_offset=1, compact=1)
    assert forget_cleaned(str(query), str(landing), set()) == {"a.json"}
    assert names_in(query, 1) == ["b.json"]  # sub/b.json: kept, whatever its name
    assert not in_folder(f"s3a://mybucket/{landing.name}/x.json", f"s3://bucket/{landing.name}")
    assert in_folder(f"s3a://bucket/{landing.name}/x.json", f"s3://bucket/{landing.name}")


def test_clean_source_and_sub_folders_are_refused_together() -> None:
    with pytest.raises(DeclarationError, match="recursiveFileLookup"):
        landing("x", glob="*.json", options={"recursiveFileLookup": "true"}, clean_source="archive")
