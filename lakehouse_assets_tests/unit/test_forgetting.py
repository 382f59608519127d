"""Spark's file-source log forgets cleaned files: a checkpoint laid out as Spark writes one
(``offsets/``, ``commits/``, ``sources/0/<n>.compact`` with its Hadoop ``.crc``), no Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakehouse_assets.lib.engine.intake.forgetting import forget_cleaned

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


def test_entries_of_cleaned_files_of_committed_batches_go_the_rest_stay(tmp_path: Path) -> None:
    logged = [("a.json", 0), ("b.json", 0), ("c%20d.json", 1), ("e.json", 1), ("f.json", 2), ("g.json", 2)]
    query = checkpoint(tmp_path, logged, committed_offset=1, compact=2)
    present = {"b.json", "c d.json"}  # still landed: Spark must keep knowing them
    done, dropped = forget_cleaned(str(query), str(tmp_path / "landing"), present, done_through=-1)
    # a and e were cleaned; f and g belong to the planned batch, which a replay reads again.
    assert (done, dropped) == (2, 2)
    assert names_in(query, 2) == ["b.json", "c%20d.json", "f.json", "g.json"]
    assert not (query / "sources" / "0" / ".2.compact.crc").exists()  # it no longer matches
    assert not (query / "sources" / "0" / "2.compact").read_text().endswith("\n")
    # A compact file is looked at once.
    assert forget_cleaned(str(query), str(tmp_path / "landing"), set(), done_through=2) == (2, 0)
    assert names_in(query, 2) == ["b.json", "c%20d.json", "f.json", "g.json"]


def test_a_log_of_another_folder_or_one_that_does_not_read_is_left_alone(tmp_path: Path) -> None:
    query = checkpoint(tmp_path, [("a.json", 0)], committed_offset=1, compact=1)
    before = (query / "sources" / "0" / "1.compact").read_text()
    assert forget_cleaned(str(query), str(tmp_path / "elsewhere"), set(), -1) == (-1, 0)
    (query / "sources" / "0" / "1.compact").write_text(before + "\nnot json")
    assert forget_cleaned(str(query), str(tmp_path / "landing"), set(), -1) == (-1, 0)
    assert (query / "sources" / "0" / ".1.compact.crc").exists()
