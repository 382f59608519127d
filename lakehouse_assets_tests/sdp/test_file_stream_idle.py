"""An SDP flow that streams a folder itself (``spark.readStream.format("json").load(path)``) starts
no query when every file Spark would list there is already in its checkpoint's file-source log,
and a file landed later still flows, exactly once. Anything the run cannot be sure of (a glob, an
option that changes what Spark lists, a sub-folder, a relative path, another folder's log) runs
the query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakehouse_assets.lib import LakehousePaths
from lakehouse_assets.lib.declare.file_streams import FileStream
from lakehouse_assets.lib.engine.reading.idle_folder import idle_file_stream
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.sdp.convert import pipeline_tables
from lakehouse_assets_tests.sdp.test_sdp_loading import HEADER, project


def pipeline(folder: Path, options: str = "") -> str:
    read = f"spark.readStream.format('json'){options}.schema('id STRING, n INT').load({str(folder)!r})"
    return HEADER + (
        f"@dp.table\ndef orders():\n    return {read}\n\n\n"
        f"@dp.append_flow(target='orders')\ndef more_orders():\n    return {read.replace(folder.name, 'more')}\n\n\n"
        "@dp.table\ndef big_orders():\n    return spark.readStream.table('orders').where('n > 1')\n\n\n"
        "@dp.append_flow(target='big_orders')\ndef bigger_orders():\n    return spark.readStream.table('more_big')\n\n\n"
        "@dp.table\ndef more_big():\n    return spark.readStream.table('orders').where('n > 2')\n"
    )


def land(folder: Path, name: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_log(checkpoint: Path, folder: Path, names: list[str]) -> None:
    """A query's checkpoint as Spark leaves it after one committed batch that took ``names``."""
    (checkpoint / "sources" / "0").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    (checkpoint / "offsets").mkdir()
    entries = [json.dumps({"path": f"file://{folder}/{n}", "timestamp": 1, "batchId": 0}) for n in names]
    (checkpoint / "sources" / "0" / "0").write_text("\n".join(["v1", *entries]))
    (checkpoint / "offsets" / "0").write_text('v1\n{}\n{"logOffset":0}')
    (checkpoint / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')


@pytest.mark.unit
def test_the_folders_a_flow_streams_itself_are_known_and_only_plain_ones_can_be_idle(tmp_path: Path) -> None:
    folder = tmp_path / "in" / "orders"
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"a.py": pipeline(folder)}))}
    runs = {r.checkpoint_name: r.file_streams for r in tables["orders"].flow_runs()}
    assert runs == {
        "orders": (FileStream(str(folder)),),
        "orders/flows/more_orders": (FileStream(str(folder.parent / "more")),),
    }
    assert tables["big_orders"].file_streams == ()
    # Each flow reads what its own code reads, not its table's first flow's inputs too.
    assert all(r.inputs == {} for r in tables["orders"].flow_runs())
    assert [list(r.inputs) for r in tables["big_orders"].flow_runs()] == [["orders"], ["more_big"]]
    assert FileStream(str(folder)).takes_every_file
    assert not FileStream(f"{folder}/*.json").takes_every_file
    assert not FileStream(str(folder), (("pathGlobFilter", "*.json"),)).takes_every_file
    assert FileStream(str(folder), (("multiLine", "true"),)).takes_every_file


@pytest.mark.unit
def test_idle_only_when_every_file_spark_would_list_is_in_the_log(tmp_path: Path) -> None:
    folder, checkpoint = tmp_path / "orders", tmp_path / "checkpoint"
    land(folder, "a.json", [{"id": "a"}])
    land(folder, "b.json", [{"id": "b"}])
    write_log(checkpoint, folder, ["a.json", "b.json"])
    stream = FileStream(str(folder))
    assert idle_file_stream(str(checkpoint), stream) == str(folder)
    for hidden in ("_SUCCESS", ".b.json.crc", "c.json._COPYING_"):  # Spark lists none of these
        (folder / hidden).write_text("")
    (folder / "_spark_metadata").mkdir()
    assert idle_file_stream(str(checkpoint), stream) == str(folder)
    # Relative: the engine resolves it in its own working folder, which the run cannot see.
    assert idle_file_stream(str(checkpoint), FileStream("orders")) is None
    assert idle_file_stream(str(checkpoint), FileStream(str(folder), (("latestFirst", "true"),))) is None
    land(folder, "c.json", [{"id": "c"}])
    assert idle_file_stream(str(checkpoint), stream) is None, "a new file: run"
    (folder / "c.json").unlink()
    (folder / "region=eu").mkdir()
    assert idle_file_stream(str(checkpoint), stream) is None, "a partition folder is read into"
    (folder / "region=eu").rmdir()
    # A store this process cannot reach (the engine may): run, do not fail.
    assert idle_file_stream(str(checkpoint), FileStream("nosuchscheme://bucket/orders")) is None
    # The same names logged from another folder say nothing of this one.
    other = tmp_path / "other"
    write_log(other, tmp_path / "elsewhere", ["a.json", "b.json"])
    assert idle_file_stream(str(other), stream) is None


def test_a_flow_streaming_its_folder_skips_when_nothing_is_new_and_takes_a_later_file(tmp_path: Path, spark) -> None:
    folder = tmp_path / "in" / "orders"
    land(folder, "a.json", [{"id": "a1", "n": 1}, {"id": "a2", "n": 2}])
    land(folder, "b.json", [{"id": "b1", "n": 3}])
    land(folder.parent / "more", "m.json", [{"id": "m1", "n": 4}])
    (tmp_path / "p").mkdir()
    tables = {t.name: t for t in pipeline_tables(project(tmp_path / "p", {"a.py": pipeline(folder)}))}
    paths = LakehousePaths(str(tmp_path / "root"))

    def ids() -> list[str]:
        return sorted(r.id for r in spark.read.format("delta").load(paths.table("orders")).collect())

    first = run_table(spark, paths, tables["orders"])
    assert ids() == ["a1", "a2", "b1", "m1"] and not first.skipped
    land(folder, "_c.json", [{"id": "hidden", "n": 9}])  # Spark leaves it out: nothing new
    again = run_table(spark, paths, tables["orders"])
    assert again.skipped == [f"nothing new in {folder} since the last run, query not started"] * 1 + [
        f"nothing new in {folder.parent / 'more'} since the last run, query not started"
    ]
    assert ids() == ["a1", "a2", "b1", "m1"]
    land(folder, "c.json", [{"id": "c1", "n": 5}])
    later = run_table(spark, paths, tables["orders"])
    assert ids() == ["a1", "a2", "b1", "c1", "m1"]
    assert later.skipped == [f"nothing new in {folder.parent / 'more'} since the last run, query not started"]
