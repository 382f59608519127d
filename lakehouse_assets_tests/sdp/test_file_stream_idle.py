"""An SDP flow that streams a folder itself (``spark.readStream.format("json").load(path)``) starts
no query when every file Spark would list there is already in its checkpoint's file-source log,
and a file landed later still flows, exactly once. Anything the run cannot be sure of (a glob, an
option that changes what Spark lists, a sub-folder, a relative path, another folder's log) runs
the query."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pyspark.sql import DataFrame

from lakehouse_assets.lib import LakehousePaths, append_flow, static, stream, streaming_table
from lakehouse_assets.lib.declare.file_streams import FileStream
from lakehouse_assets.lib.engine.reading.idle import streams_as_declared
from lakehouse_assets.lib.engine.reading.idle_folder import idle_file_stream
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.sdp import transform
from lakehouse_assets.lib.sdp.convert import pipeline_tables
from lakehouse_assets_tests.sdp.test_sdp_loading import HEADER, project


def pipeline(folder: Path, options: str = "") -> str:
    read = f"spark.readStream.format('json'){options}.schema('id STRING, n INT').load({str(folder)!r})"
    noted = ".join(NOTES, 'id', 'left')"
    return HEADER + (
        "# Built at import: a run's query must get a frame of the run's own session.\n"
        f"NOTES = spark.read.format('json').schema('id STRING, note STRING').load({str(folder.parent / 'notes')!r})\n\n\n"
        f"@dp.table\ndef orders():\n    return {read}{noted}\n\n\n"
        f"@dp.append_flow(target='orders')\ndef more_orders():\n    return {read.replace(folder.name, 'more')}{noted}\n\n\n"
        "@dp.table\ndef big_orders():\n    return spark.readStream.table('orders').where('n > 1')\n\n\n"
        "@dp.append_flow(target='big_orders')\ndef bigger_orders():\n    return spark.readStream.table('more_big')\n\n\n"
        "@dp.table\ndef more_big():\n    return spark.readStream.table('orders').where('n > 2')\n"
    )


def land(folder: Path, name: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def mtime_ms(file: Path) -> int:
    return file.stat().st_mtime_ns // 1_000_000 if file.exists() else 1


def log_batch(checkpoint: Path, folder: Path, batch: int, names: list[str]) -> None:
    """The file-source log batch ``batch``, taking ``names`` as Spark logs them."""
    entries = [
        json.dumps({"path": f"file://{folder}/{n}", "timestamp": mtime_ms(folder / n), "batchId": batch}) for n in names
    ]
    (checkpoint / "sources" / "0").mkdir(parents=True, exist_ok=True)
    (checkpoint / "sources" / "0" / str(batch)).write_text("\n".join(["v1", *entries]))


def write_log(checkpoint: Path, folder: Path, names: list[str], sources: str = '{"logOffset":0}') -> None:
    """A query's checkpoint as Spark leaves it after one committed batch that took ``names``."""
    log_batch(checkpoint, folder, 0, names)
    (checkpoint / "commits").mkdir()
    (checkpoint / "offsets").mkdir()
    (checkpoint / "offsets" / "0").write_text(f"v1\n{{}}\n{sources}")
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
    # A stream of no path in the same flow (Kafka here): recorded, so the flow always runs.
    kafka = "spark.readStream.format('kafka').option('subscribe', 't').load().selectExpr('CAST(value AS STRING) AS id')"
    mixed = (
        HEADER
        + f"@dp.table\ndef mixed():\n    return spark.readStream.text({str(folder)!r}).selectExpr('value AS id').union({kafka})\n"
    )
    (tmp_path / "m").mkdir()
    (mixed_table,) = pipeline_tables(project(tmp_path / "m", {"m.py": mixed}))
    assert [f.path for f in mixed_table.file_streams] == [str(folder), ""]
    assert not FileStream("").takes_every_file


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
    assert idle_file_stream(str(checkpoint), FileStream("gs://bucket/orders")) is None, "not listed from here"
    # The same names logged from another folder say nothing of this one.
    other = tmp_path / "other"
    write_log(other, tmp_path / "elsewhere", ["a.json", "b.json"])
    assert idle_file_stream(str(other), stream) is None


@pytest.mark.unit
def test_anything_the_run_cannot_be_sure_of_runs_the_query(tmp_path: Path) -> None:
    folder = tmp_path / "orders"
    land(folder, "a.json", [{"id": "a"}])
    stream = FileStream(str(folder))
    # The query reads a second source (a stream of no path, or the folder twice).
    two = tmp_path / "two"
    write_log(two, folder, ["a.json"], sources='{"logOffset":0}\n{"topic":{"0":5}}')
    assert idle_file_stream(str(two), stream) is None
    # Spark logged a file for a batch it had not planned when it stopped: the next start takes it.
    ahead = tmp_path / "ahead"
    write_log(ahead, folder, ["a.json"])
    assert idle_file_stream(str(ahead), stream) == str(folder)
    land(folder, "b.json", [{"id": "b"}])
    log_batch(ahead, folder, 1, ["b.json"])
    assert idle_file_stream(str(ahead), stream) is None
    # A folder this process does not see (the engine's mount) is not an empty one.
    gone = tmp_path / "gone"
    write_log(gone, tmp_path / "elsewhere", ["a.json"])
    assert idle_file_stream(str(gone), FileStream(str(tmp_path / "elsewhere"))) is None
    # A name landed again (another modification time): Spark takes it once its entry is purged.
    again = tmp_path / "again"
    write_log(again, folder, ["a.json", "b.json"])
    assert idle_file_stream(str(again), stream) == str(folder)
    os.utime(folder / "a.json", ns=(0, (folder / "a.json").stat().st_mtime_ns + 5_000_000_000))
    assert idle_file_stream(str(again), stream) is None
    # A folder where a logged file was: Spark reads into it.
    (folder / "a.json").unlink()
    (folder / "a.json").mkdir()
    logged_as_it_is = tmp_path / "dir"
    write_log(logged_as_it_is, folder, ["a.json", "b.json"])  # even with the folder's own time
    assert idle_file_stream(str(logged_as_it_is), stream) is None


@pytest.mark.unit
def test_a_flow_of_its_own_function_gets_the_tables_input_only_for_its_parameters() -> None:
    def total(orders: DataFrame, prices: DataFrame) -> DataFrame:
        return orders

    def more(orders: DataFrame, **others: DataFrame) -> DataFrame:
        return orders

    table = streaming_table(
        group="g",
        inputs={"orders": stream("a"), "prices": static("p")},
        flows=[append_flow("b", inputs={"extra": stream("c")}, transform=more)],
    )(total)
    assert {r.flow: dict(r.inputs) for r in table.flow_runs()} == {
        None: {"orders": stream("a"), "prices": static("p")},
        "b": {"orders": stream("a"), "extra": stream("c")},
    }


def test_a_flow_streaming_its_folder_skips_when_nothing_is_new_and_takes_a_later_file(tmp_path: Path, spark) -> None:
    folder = tmp_path / "in" / "orders"
    land(folder, "a.json", [{"id": "a1", "n": 1}, {"id": "a2", "n": 2}])
    land(folder, "b.json", [{"id": "b1", "n": 3}])
    land(folder.parent / "more", "m.json", [{"id": "m1", "n": 4}])
    land(folder.parent / "notes", "n.json", [{"id": "a1", "note": "first"}])
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
    transform._LOADED.clear()  # as in a new run process: the idle check plans the flow first
    later = run_table(spark, paths, tables["orders"])
    assert ids() == ["a1", "a2", "b1", "c1", "m1"]
    notes = spark.read.format("delta").load(paths.table("orders")).where("note IS NOT NULL").collect()
    assert [(r.id, r.note) for r in notes] == [("a1", "first")]
    assert later.skipped == [f"nothing new in {folder.parent / 'more'} since the last run, query not started"]


@pytest.mark.unit
def test_the_run_checks_the_folder_the_code_streams_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A path the code computes when it runs (here from the environment, as from the date) is
    planned again at run time: the definitions' folder is not taken on trust."""
    code = (
        HEADER + "import os\n\n\n@dp.table\ndef daily():\n"
        f"    return spark.readStream.format('json').schema('id STRING').load({str(tmp_path)!r} + '/' + os.environ['DAY'])\n"
    )
    monkeypatch.setenv("DAY", "2026-12-07")
    (table,) = pipeline_tables(project(tmp_path, {"d.py": code}))
    assert table.file_streams == (FileStream(f"{tmp_path}/2026-12-07"),)
    assert table.transform.streamed_folders() == table.file_streams
    monkeypatch.setenv("DAY", "2026-12-08")
    assert table.transform.streamed_folders() == (FileStream(f"{tmp_path}/2026-12-08"),)
    assert not streams_as_declared(table), "the run streams another folder than declared: run the query"
