"""Landed CSV with an inferred schema that evolves as Auto Loader's modes say: each file's values
are taken by its own header's names (files may reorder, lack or add columns), and a downstream
table follows new columns without a full refresh. Every table is compared with rows computed
here from the landed text."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse_assets.lib import LakehouseError, LakehousePaths, landing, stream, streaming_table
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.reading.source_log import planned_files
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.engine.schema.csv_layout import read_header

ROUND_1 = {"a.csv": "id,kwh\n1,1.5\n2,2.25\n"}
# Columns in another order, one new, a value that is not a number; a row with a value past the
# end of its file's header (kept as _c2).
ROUND_2 = {"b.csv": "site,id,kwh\nx,3,n/a\ny,4,1\n", "b0.csv": "id,kwh\n11,1.0,surplus\n"}
# Two new columns, a quoted value with a comma, an empty one (null), and a gzipped file
# whose header lacks kwh.
ROUND_3 = {"c.csv": 'id,kwh,site,note\n5,0.5,z,"hello, world"\n6,0.25,,\n', "d 2.csv.gz": "note,id\nlate,7\n"}
TYPES = {"id": int, "kwh": float, "site": str, "note": str}


def land(paths: LakehousePaths, files: dict[str, str]) -> None:
    folder = Path(paths.landing("meters"))
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        data = gzip.compress(text.encode()) if name.endswith(".gz") else text.encode()
        (folder / f"_{name}").write_bytes(data)
        (folder / f"_{name}").rename(folder / name)


def readings(mode: str | None = None, schema: str | None = None, hints: str | None = None):
    @streaming_table(
        group="raw",
        name="readings",
        inputs={
            "rows": landing(
                "meters", format="csv", glob="*.{csv,csv.gz}", schema=schema, schema_hints=hints, schema_evolution=mode
            )
        },
    )
    def table(rows: DataFrame) -> DataFrame:
        return rows

    return table


@streaming_table(group="used", inputs={"readings": stream("readings")})
def doubled(readings: DataFrame) -> DataFrame:
    """A downstream table that passes every column through: it follows new ones."""
    return readings.withColumn("kwh2", F.col("kwh") * 2).drop("_ingested_at")


def _typed(value: str, kind: type) -> object:
    try:
        return kind(value)
    except ValueError:
        return None


def expected(files: dict[str, str], columns: list[str], rescue_new: bool) -> list[dict]:
    """Each record as the table's row: the columns its header names, typed (a value that does not
    fit is null and rescued as text), the header's other columns rescued when ``rescue_new``."""
    rows = []
    for text in files.values():
        header, *records = list(csv.reader(io.StringIO(text)))
        for record in records:
            names = header + [f"_c{i}" for i in range(len(header), len(record))]
            values = {name: value or None for name, value in zip(names, record, strict=True)}
            row = {c: None if values.get(c) is None else _typed(values[c], TYPES[c]) for c in columns}
            rescued = {
                name: value
                for name, value in values.items()
                if value is not None
                and ((name in columns and row[name] is None) or (name not in columns and rescue_new))
            }
            rows.append({**row, "_rescued_data": json.dumps(rescued, separators=(",", ":")) if rescued else None})
    return sorted(rows, key=lambda r: r["id"])


def rows_of(spark: SparkSession, paths: LakehousePaths, name: str) -> list[dict]:
    frame = spark.read.format("delta").load(paths.table(name)).drop("_ingested_at", "_source_file")
    return sorted((r.asDict() for r in frame.collect()), key=lambda r: r["id"])


def test_new_columns_are_added_by_header_name_and_the_stream_downstream_follows(
    tmp_path: Path, spark: SparkSession
) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    table = readings()
    land(paths, ROUND_1)
    first = run_table(spark, paths, table)
    assert "inferred the schema of landing/meters: id int, kwh double" in [
        c.split(" (")[0] for c in first.schema_changes
    ]
    run_table(spark, paths, doubled)
    assert rows_of(spark, paths, "readings") == expected(ROUND_1, ["id", "kwh"], True)

    land(paths, ROUND_2)
    assert run_table(spark, paths, table).schema_changes[0] == "added column site string (first in b.csv)"
    run_table(spark, paths, doubled)
    land(paths, ROUND_3)
    assert run_table(spark, paths, table).schema_changes[0] == "added column note string (first in c.csv)"
    run_table(spark, paths, doubled)

    landed = {**ROUND_1, **ROUND_2, **ROUND_3}
    want = expected(landed, ["id", "kwh", "site", "note"], True)
    assert rows_of(spark, paths, "readings") == want
    got_down = rows_of(spark, paths, "doubled")
    assert [r["kwh2"] for r in got_down] == [None if w["kwh"] is None else w["kwh"] * 2 for w in want]
    assert [{k: v for k, v in r.items() if k != "kwh2"} for r in got_down] == want


def test_fail_on_new_columns_names_file_and_field_and_writes_nothing(tmp_path: Path, spark: SparkSession) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    land(paths, ROUND_1)
    run_table(spark, paths, readings("failOnNewColumns"))
    before = rows_of(spark, paths, "readings")
    land(paths, ROUND_2)
    with pytest.raises(LakehouseError, match=r"b\.csv in landing/meters brings new field\(s\) site"):
        run_table(spark, paths, readings("failOnNewColumns"))
    assert rows_of(spark, paths, "readings") == before
    widened = readings("failOnNewColumns", schema="id int, kwh double, site string")
    assert run_table(spark, paths, widened).schema_changes[0] == "added column site string (now in schema=)"
    assert rows_of(spark, paths, "readings") == expected({**ROUND_1, **ROUND_2}, ["id", "kwh", "site"], True)


@pytest.mark.parametrize("mode", ["rescue", "none"])
def test_rescue_keeps_new_columns_aside_and_none_ignores_them(tmp_path: Path, spark: SparkSession, mode: str) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    for files in (ROUND_1, ROUND_2, ROUND_3):
        land(paths, files)
        changes = run_table(spark, paths, readings(mode, hints="kwh double")).schema_changes
        assert not any("added" in c for c in changes)
    landed = {**ROUND_1, **ROUND_2, **ROUND_3}
    assert rows_of(spark, paths, "readings") == expected(landed, ["id", "kwh"], mode == "rescue")


def test_a_file_landing_as_the_query_starts_is_read_by_its_header(tmp_path: Path, spark: SparkSession) -> None:
    """A file that lands after the run read the headers but before its query listed the folder
    stops that query whole; the run reads its header and runs the query again."""
    paths = LakehousePaths(str(tmp_path / "root"))
    land(paths, ROUND_1)
    run_table(spark, paths, readings())
    land(paths, ROUND_2)
    late = {"e.csv": "kwh,site,id\n9.5,w,8\n"}

    def land_late(table: str, reached: str) -> None:
        if reached == "after_schema_evolved" and not Path(paths.landing("meters"), "e.csv").exists():
            land(paths, late)

    faults.install(land_late)
    try:
        messages: list[str] = []
        run_table(spark, paths, readings(), log=messages.append)
    finally:
        faults.install(None)
    assert (
        "readings: a CSV file landed as this run started, after its header was read: e.csv; running the query again"
        in messages
    )
    assert rows_of(spark, paths, "readings") == expected({**ROUND_1, **ROUND_2, **late}, ["id", "kwh", "site"], True)


@pytest.mark.unit
def test_headers_are_read_as_spark_reads_them(tmp_path: Path) -> None:
    def header(text: str | bytes, options: dict[str, str] | None = None, name: str = "f.csv", known=None) -> list[str]:
        path = tmp_path / name
        data = text if isinstance(text, bytes) else text.encode()
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return read_header(str(path), options or {}, known)

    assert header("\ufeffid,kwh\n1,2\n") == ["id", "kwh"]
    assert header('"id","k,wh",site\n1,2,3\n', {"quote": '"', "escape": '"'}) == ["id", "k,wh", "site"]
    assert header('"a ""b""",c\n', {"escape": '"'}) == ['a "b"', "c"]
    assert header("\n   \n# made by x\nid;kwh\n", {"sep": ";", "comment": "#"}) == ["id", "kwh"]
    assert header("id\tkwh\n", {"sep": "\\t"}) == ["id", "kwh"]
    assert header("id||kwh\n", {"sep": "||"}) == ["id", "kwh"]
    assert header("id,,ID,x\n") == ["id0", "_c1", "ID2", "x"]  # Spark's names for empty and repeated ones
    assert header("note,id\n", name="g.csv.gz") == ["note", "id"]
    assert header("1,2,3\n", {"header": "false"}, known=["id", "kwh"]) == ["id", "kwh", "_c2"]
    (tmp_path / "bad.csv.gz").write_bytes(b"not gzip")
    with pytest.raises(LakehouseError, match=r"cannot read the header of landed file .*bad.csv.gz"):
        read_header(str(tmp_path / "bad.csv.gz"), {})


@pytest.mark.unit
def test_the_files_of_a_planned_batch_are_read_from_its_offsets(tmp_path: Path) -> None:
    """The files a planned, uncommitted micro-batch will replay (the intake names any that went
    missing): the source's own batch ids (which a no-data batch makes drift from the query's)
    are read from the committed offset and the planned one."""
    query = tmp_path / "query"
    for folder in ("commits", "offsets", "sources/0", "sources/1"):
        (query / folder).mkdir(parents=True)
    entry = '{{"path":"file:///r/landing/{src}/{name}","timestamp":1,"batchId":{batch}}}'
    (query / "sources/0/0").write_text("v1\n" + entry.format(src="other", name="a.csv", batch=0))
    (query / "sources/1/0").write_text("v1\n" + entry.format(src="meters", name="a%20b.csv", batch=0))
    (query / "sources/1/1").write_text("v1\n" + entry.format(src="meters", name="c.csv", batch=1))
    for batch, log_offset in ((0, 0), (1, 0), (2, 1)):  # batch 1: no data; batch 2 planned, not committed
        (query / f"offsets/{batch}").write_text(f'v1\n{{}}\n{{"logOffset":0}}\n{{"logOffset":{log_offset}}}')
    (query / "commits/0").write_text("v1")
    (query / "commits/1").write_text("v1")
    assert planned_files(str(query), "/r/landing/meters") == ["c.csv"]
    assert planned_files(str(query), "/r/landing/nowhere") is None
    (query / "commits/2").write_text("v1")
    assert planned_files(str(query), "/r/landing/meters") is None
