"""Where a reader of a Delta table stands, read from its checkpoint's offsets and the table's log
(files written here as Spark and Delta write them), and the VACUUM retention that keeps what it
has yet to read. (With real queries, OPTIMIZE and VACUUM: ``framework/test_vacuum_readers.py``.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import DataFrame

from lakehouse_assets.lib import LakehousePaths, append_flow, change_feed, static, stream, streaming_table
from lakehouse_assets.lib.engine.state.checkpoint import query_checkpoint
from lakehouse_assets.lib.engine.state.readers import (
    Reader,
    ReaderPositionUnknown,
    Unread,
    oldest_unread,
    readers_of,
    retention_keeping,
)

pytestmark = pytest.mark.unit
TABLE_ID = "6f1c8f7e-58a4-4b7e-9a55-2c6f0a3f9d10"
HOUR_MS = 3_600_000
NOW_MS = 1_800_000_000_000
COMMITTED_MS = {v: NOW_MS - (300 - 10 * v) * HOUR_MS for v in range(5)}  # version 0: 300 hours ago


def copy(upstream: DataFrame) -> DataFrame:
    return upstream


def table_log(paths: LakehousePaths) -> str:
    """Versions 0 to 4 of ``upstream``, each with its commitInfo; version 0 records the id."""
    log = Path(paths.table("upstream")) / "_delta_log"
    if log.exists():
        return paths.table("upstream")
    log.mkdir(parents=True)
    for version, stamp in COMMITTED_MS.items():
        actions = [{"commitInfo": {"timestamp": stamp, "operation": "WRITE"}}]
        if version == 0:
            actions.append({"metaData": {"id": TABLE_ID}})
        (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return paths.table("upstream")


def checkpoint(paths: LakehousePaths, reader: Reader, batch: int, committed: bool, *sources: object) -> None:
    """The reader's offsets file for ``batch`` (one line per source: an offset, or ``-``)."""
    query = Path(query_checkpoint(paths, reader.flow))
    (query / "offsets").mkdir(parents=True, exist_ok=True)
    lines = ["v1", json.dumps({"batchWatermarkMs": 0})] + [s if s == "-" else json.dumps(s) for s in sources]
    (query / "offsets" / str(batch)).write_text("\n".join(lines))
    if committed:
        (query / "commits").mkdir(exist_ok=True)
        (query / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def offset(version: int, index: int = -1, starting: bool = False, table_id: str = TABLE_ID) -> dict:
    return {
        "sourceVersion": 1,
        "reservoirId": table_id,
        "reservoirVersion": version,
        "index": index,
        "isStartingVersion": starting,
    }


def reader(options: dict[str, str] | None = None) -> Reader:
    table = streaming_table(group="g", inputs={"upstream": stream("upstream", options=options)})(copy)
    return readers_of([table], "upstream")[0]


def oldest(paths: LakehousePaths, *readers: Reader) -> Unread | None:
    return oldest_unread(paths, "upstream", table_log(paths), TABLE_ID, readers)


def test_the_readers_of_a_table_are_its_streams_and_change_feeds_flows_included() -> None:
    both = streaming_table(
        group="g",
        inputs={"upstream": change_feed("upstream")},
        flows=[
            append_flow("again", inputs={"upstream": stream("upstream")}),
            append_flow("old", inputs={"upstream": static("upstream")}, once=True),
        ],
    )(copy)
    lookup = streaming_table(group="g", name="lookup", inputs={"upstream": static("upstream")})(copy)
    assert [r.name for r in readers_of([both, lookup], "upstream")] == ["copy", "copy (flow again)"]


def test_a_reader_that_never_ran_holds_only_what_its_starting_option_names(tmp_path: Path) -> None:
    paths = LakehousePaths(str(tmp_path))
    assert oldest(paths, reader(), reader({"startingVersion": "latest"})) is None
    from_two = oldest(paths, reader({"startingVersion": "2"}))
    assert from_two == Unread("copy", COMMITTED_MS[2], 2, "its startingVersion option (2)")
    since = oldest_unread(
        paths,
        "upstream",
        paths.table("upstream"),
        TABLE_ID,
        [reader({"startingTimestamp": "2026-01-01T00:00:00+00:00"})],
    )
    assert since is not None and since.version is None and since.since_ms == 1_767_225_600_000


@pytest.mark.parametrize(
    ("committed", "position", "expected"),
    [
        (True, offset(3), 3),  # changes of version 3 on
        (True, offset(3, index=4), 3),  # in the middle of version 3
        (True, offset(2, index=7, starting=True), 2),  # in the middle of the initial snapshot of version 2
        (True, offset(5), None),  # past the latest version: read everything
        (False, offset(3, starting=True), 3),  # planned batch 0 inside the snapshot of version 3
        (False, offset(3), 2),  # planned batch 0 past it: Delta reads the snapshot of version 2
    ],
)
def test_a_reader_stands_where_its_checkpoint_says(
    tmp_path: Path, committed: bool, position: dict, expected: int | None
) -> None:
    paths = LakehousePaths(str(tmp_path))
    copy_reader = reader()
    checkpoint(paths, copy_reader, 0, committed, position)
    found = oldest(paths, copy_reader)
    assert (found.version if found else None) == expected
    if found:
        assert found.since_ms == COMMITTED_MS[expected]


def test_the_last_committed_batch_counts_not_a_planned_one_and_sources_are_found_by_table_id(tmp_path: Path) -> None:
    paths = LakehousePaths(str(tmp_path))
    copy_reader = reader()
    other = offset(0, table_id="another-table")
    checkpoint(paths, copy_reader, 6, True, other, offset(2))
    checkpoint(paths, copy_reader, 7, False, other, offset(4))  # replayed from batch 6's offset
    found = oldest(paths, copy_reader)
    assert found is not None and (found.version, found.how) == (2, "the offset of its last committed batch, 6")


def test_where_a_reader_stands_cannot_be_told_vacuum_is_refused_a_reason(tmp_path: Path) -> None:
    paths = LakehousePaths(str(tmp_path))
    copy_reader = reader()
    checkpoint(paths, copy_reader, 0, True, offset(1, table_id="a-table-since-replaced"))
    with pytest.raises(
        ReaderPositionUnknown, match=r"^copy: its checkpoint \(.*offsets/0\) records no position in upstream"
    ):
        oldest(paths, copy_reader)
    checkpoint(paths, copy_reader, 0, True, offset(1))
    (Path(paths.table("upstream")) / "_delta_log" / f"{1:020d}.json").unlink()  # cleaned up from the log
    with pytest.raises(ReaderPositionUnknown, match=r"^copy reads upstream from version 1 .* no longer holds"):
        oldest_unread(paths, "upstream", paths.table("upstream"), TABLE_ID, [copy_reader])


def test_a_source_without_an_offset_yet_starts_where_its_options_say(tmp_path: Path) -> None:
    paths = LakehousePaths(str(tmp_path))
    copy_reader = reader({"startingVersion": "1"})
    checkpoint(paths, copy_reader, 0, True, {"logOffset": 3}, "-")
    found = oldest(paths, copy_reader)
    assert found is not None and found.version == 1


def test_the_oldest_reader_sets_the_retention() -> None:
    assert retention_keeping(168, None, NOW_MS) == 168
    recent = Unread("copy", NOW_MS - 3 * HOUR_MS, 4, "")
    assert retention_keeping(168, recent, NOW_MS) == 168
    behind = Unread("copy", NOW_MS - 200 * HOUR_MS - 1, 1, "")
    assert retention_keeping(168, behind, NOW_MS) == 202  # 200 hours and a millisecond, rounded up, plus one
    assert retention_keeping(0, Unread("copy", NOW_MS, 4, ""), NOW_MS) == 1
