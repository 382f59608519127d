"""Landed JSON with an inferred schema that evolves as Auto Loader's modes say, and a downstream
table that follows the new columns without a full refresh. Every table is compared with rows
computed here from the landed lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse_assets.lib import (
    DeclarationError,
    LakehouseError,
    LakehousePaths,
    change_feed,
    landing,
    recompute,
    stream,
    streaming_table,
)
from lakehouse_assets.lib.declare.ddl import ddl_columns
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.orchestrate.markdown import escape
from lakehouse_assets.lib.orchestrate.metadata import run_metadata
from verification.crash import materialize_in_child

FIELDS = ("id", "kwh", "site", "extra")


def land(paths: LakehousePaths, name: str, records: list[object]) -> None:
    folder = Path(paths.landing("meters"))
    folder.mkdir(parents=True, exist_ok=True)
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"
    (folder / f"_{name}").write_text(text)
    (folder / f"_{name}").rename(folder / name)


def readings(mode: str | None, schema: str | None = None, hints: str | None = None):
    @streaming_table(
        group="raw",
        name="readings",
        inputs={"rows": landing("meters", format="json", schema=schema, schema_hints=hints, schema_evolution=mode)},
    )
    def table(rows: DataFrame) -> DataFrame:
        return rows

    return table


@streaming_table(group="used", inputs={"readings": stream("readings")})
def doubled(readings: DataFrame) -> DataFrame:
    """A downstream table that passes every column through: it follows new ones."""
    return readings.withColumn("kwh2", F.col("kwh") * 2).drop("_ingested_at")


@streaming_table(
    group="used",
    inputs={"readings": change_feed("readings")},
    sink=recompute(keys=["site"], reread_by="site"),
)
def per_site(readings: DataFrame) -> DataFrame:
    """A change-feed reader of the evolving table, grouping by a column that arrives later."""
    return readings.groupBy("site").agg(F.count(F.lit(1)).alias("readings"))


def rows_of(spark: SparkSession, paths: LakehousePaths, name: str) -> list[dict]:
    frame = spark.read.format("delta").load(paths.table(name)).drop("_ingested_at", "_source_file")
    return sorted((r.asDict(recursive=True) for r in frame.collect()), key=lambda r: str(r.get("id")))


def expected(records: list[object], columns: dict[str, type], rescue_new: bool) -> list[dict]:
    """Each record as the table's row: its declared fields typed, the rest (and misfits) rescued."""
    out = []
    for record in records:
        if not isinstance(record, dict):
            out.append(
                {
                    **dict.fromkeys(columns),
                    "_rescued_data": json.dumps({"_corrupt_record": record}, separators=(",", ":")),
                }
            )
            continue
        row, rescued = {}, {}
        for column, kind in columns.items():
            value = record.get(column)
            kinds = (float, int) if kind is float else kind
            fits = value is None or (isinstance(value, kinds) and not isinstance(value, bool))
            row[column] = (float(value) if kind is float and value is not None else value) if fits else None
            if not fits:
                rescued[column] = value
        if rescue_new:
            rescued.update({k: v for k, v in record.items() if k not in columns})
        row["_rescued_data"] = json.dumps(rescued, separators=(",", ":")) if rescued else None
        out.append(row)
    return sorted(out, key=lambda r: str(r.get("id")))


ROUND_1 = [{"id": "1", "kwh": 1.5}, {"id": "2", "kwh": 2.25}, "not json", ""]
ROUND_2 = [{"id": "3", "kwh": "n/a", "site": "x"}, {"id": "4", "kwh": 1, "site": "y", "extra": {"a": 1}}]
ROUND_3 = [{"id": "5", "kwh": 0.5, "site": "z"}, {"id": "6", "kwh": 0.25}]  # a null site again


@pytest.mark.unit
def test_ddl_columns_keep_order_and_nested_types() -> None:
    assert ddl_columns("a string, `b c` decimal(10,2), d struct<x:int,y:int>") == {
        "a": "string",
        "b c": "decimal(10,2)",
        "d": "struct<x:int,y:int>",
    }
    with pytest.raises(DeclarationError, match="not 'name type'"):
        ddl_columns("just_a_name")
    with pytest.raises(DeclarationError, match="schema_evolution must be one of"):
        landing("x", format="json", schema_evolution="merge")  # type: ignore[arg-type]
    with pytest.raises(DeclarationError, match="apply to format='json', 'csv', 'parquet' or 'avro'"):
        landing("x", schema_hints="a int")
    for binary in ("parquet", "avro"):
        with pytest.raises(DeclarationError, match=f"{binary.capitalize()} has no rescued data column"):
            landing("x", format=binary, schema_evolution="rescue")  # type: ignore[arg-type]


def test_add_new_columns_grows_the_table_and_the_stream_downstream_follows(tmp_path: Path, spark: SparkSession) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    table = readings(None)
    land(paths, "a.jsonl", ROUND_1)
    first = run_table(spark, paths, table)
    assert any("inferred the schema" in c for c in first.schema_changes)
    run_table(spark, paths, doubled)
    assert rows_of(spark, paths, "readings") == expected(
        [r for r in ROUND_1 if r != ""], {"id": str, "kwh": float}, True
    )

    land(paths, "b.jsonl", ROUND_2)
    second = run_table(spark, paths, table)
    assert "added column site string (first in b.jsonl)" in second.schema_changes
    assert any(c.startswith("added column extra struct") for c in second.schema_changes)
    assert escape("added column site string") in run_metadata(second)["schema_changes"].value
    down = run_table(spark, paths, doubled)
    assert any("site" in c for c in down.schema_changes), down.schema_changes
    run_table(spark, paths, per_site)  # its first run reads the whole change feed, across the change
    land(paths, "c.jsonl", ROUND_3)
    assert run_table(spark, paths, table).schema_changes == []
    run_table(spark, paths, doubled)
    run_table(spark, paths, per_site)

    landed = [r for r in ROUND_1 + ROUND_2 + ROUND_3 if r != ""]
    want = expected(landed, {"id": str, "kwh": float, "site": str, "extra": dict}, True)
    want = [{**w, "extra": {"a": w["extra"]["a"]} if w["extra"] else None} for w in want]
    assert rows_of(spark, paths, "readings") == want
    got_down = rows_of(spark, paths, "doubled")
    assert [r["kwh2"] for r in got_down] == [None if w["kwh"] is None else w["kwh"] * 2 for w in want]
    assert [{k: v for k, v in r.items() if k != "kwh2"} for r in got_down] == want
    sites: dict = {}
    for w in want:
        sites[w["site"]] = sites.get(w["site"], 0) + 1
    got_sites = {r.site: r.readings for r in spark.read.format("delta").load(paths.table("per_site")).collect()}
    assert got_sites == sites


def test_fail_on_new_columns_writes_nothing_until_the_schema_has_them(tmp_path: Path, spark: SparkSession) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    land(paths, "a.jsonl", ROUND_1)
    run_table(spark, paths, readings("failOnNewColumns"))
    before = rows_of(spark, paths, "readings")
    land(paths, "b.jsonl", ROUND_2)
    with pytest.raises(LakehouseError, match=r"b\.jsonl in landing/meters brings new field\(s\) extra, site"):
        run_table(spark, paths, readings("failOnNewColumns"))
    assert rows_of(spark, paths, "readings") == before
    widened = readings("failOnNewColumns", schema="id string, kwh double, site string, extra struct<a:bigint>")
    assert run_table(spark, paths, widened).schema_changes[:2] == [
        "added column site string (now in schema=)",
        "added column extra struct<a:bigint> (now in schema=)",
    ]
    landed = [r for r in ROUND_1 + ROUND_2 if r != ""]
    want = expected(landed, {"id": str, "kwh": float, "site": str, "extra": dict}, True)
    assert rows_of(spark, paths, "readings") == want


@pytest.mark.parametrize("mode", ["rescue", "none"])
def test_rescue_keeps_new_fields_aside_and_none_ignores_them(tmp_path: Path, spark: SparkSession, mode: str) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    for name, records in (("a.jsonl", ROUND_1), ("b.jsonl", ROUND_2)):
        land(paths, name, records)
        assert not any("added" in c for c in run_table(spark, paths, readings(mode, hints="kwh double")).schema_changes)
    landed = [r for r in ROUND_1 + ROUND_2 if r != ""]
    assert rows_of(spark, paths, "readings") == expected(landed, {"id": str, "kwh": float}, mode == "rescue")


def test_a_run_killed_after_the_schema_evolved_is_retried_exactly(tmp_path: Path, spark: SparkSession) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    land(paths, "a.jsonl", ROUND_1)
    run_table(spark, paths, readings(None))
    land(paths, "b.jsonl", ROUND_2)

    class Killed(Exception):
        pass

    killed_at: list[str] = []
    for point in ("after_schema_evolved", "after_table_write"):

        def kill(table: str, reached: str, point: str = point) -> None:
            if reached == point:
                killed_at.append(point)
                raise Killed(point)

        faults.install(kill)
        try:
            with pytest.raises(Exception):  # noqa: B017 - the run stops wherever the fault is
                run_table(spark, paths, readings(None))
        finally:
            faults.install(None)
    assert killed_at == ["after_schema_evolved", "after_table_write"]
    run_table(spark, paths, readings(None))
    landed = [r for r in ROUND_1 + ROUND_2 if r != ""]
    want = expected(landed, {"id": str, "kwh": float, "site": str, "extra": dict}, True)
    assert rows_of(spark, paths, "readings") == [{**w, "extra": w["extra"]} for w in want]


@pytest.mark.slow
def test_a_run_sigkilled_while_it_adds_a_column_is_retried_exactly(tmp_path: Path, spark: SparkSession) -> None:
    """The whole run (Python and its JVM) SIGKILLed right after the new schema version is written,
    then right after the table write that carries the new column; the next run is exact."""
    location = ("-m", "lakehouse_assets_tests.framework.evolving_definitions")
    paths = LakehousePaths(str(tmp_path / "lakehouse"))
    land(paths, "a.jsonl", ROUND_1)
    assert materialize_in_child(tmp_path, "*", location=location).returncode == 0
    land(paths, "b.jsonl", ROUND_2)
    for fault in ("meter_readings:after_schema_evolved", "meter_readings:after_table_write"):
        outcome = materialize_in_child(tmp_path, "*", fault=fault, location=location)
        assert outcome.killed, f"{fault} did not fire:\n{outcome.output}"
    final = materialize_in_child(tmp_path, "*", location=location)
    assert final.returncode == 0, final.output
    landed = [r for r in ROUND_1 + ROUND_2 if r != ""]
    want = expected(landed, {"id": str, "kwh": float, "site": str, "extra": dict}, True)
    assert rows_of(spark, paths, "meter_readings") == want
    assert rows_of(spark, paths, "metered") == [w for w in want if w["kwh"] is not None]


def land_parquet(paths: LakehousePaths, name: str, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(paths.landing("meters"))
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / f"_{name}")
    (folder / f"_{name}").rename(folder / name)


@pytest.mark.parametrize("mode", ["addNewColumns", "failOnNewColumns"])
def test_parquet_files_evolve_as_their_footers_say(tmp_path: Path, spark: SparkSession, mode: str) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))

    @streaming_table(
        group="raw",
        name="readings",
        inputs={"rows": landing("meters", format="parquet", schema_evolution=mode)},  # type: ignore[arg-type]
    )
    def parquet_readings(rows: DataFrame) -> DataFrame:
        return rows

    first = [{"id": "1", "kwh": 1.5}, {"id": "2", "kwh": None}]
    land_parquet(paths, "a.parquet", first)
    run_table(spark, paths, parquet_readings)
    land_parquet(paths, "b.parquet", [{"id": "3", "kwh": 2.0, "site": "x"}])
    if mode == "failOnNewColumns":
        with pytest.raises(LakehouseError, match=r"b\.parquet in landing/meters brings new field\(s\) site"):
            run_table(spark, paths, parquet_readings)
        assert rows_of(spark, paths, "readings") == first
        return
    assert (
        run_table(spark, paths, parquet_readings).schema_changes[0] == "added column site string (first in b.parquet)"
    )
    want = [{**r, "site": None} for r in first] + [{"id": "3", "kwh": 2.0, "site": "x"}]
    assert rows_of(spark, paths, "readings") == want


def land_avro(spark: SparkSession, paths: LakehousePaths, name: str, rows: list[dict], ddl: str) -> None:
    """One Avro file written by Spark's own writer (each file carries its writer schema)."""
    folder = Path(paths.landing("meters"))
    folder.mkdir(parents=True, exist_ok=True)
    written = folder.parent / f"_avro-{name}"
    spark.createDataFrame(rows, ddl).coalesce(1).write.format("avro").save(str(written))
    (part,) = written.glob("part-*.avro")
    part.rename(folder / name)


def test_avro_files_evolve_as_their_writer_schemas_say(tmp_path: Path, spark: SparkSession) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))

    @streaming_table(group="raw", name="readings", inputs={"rows": landing("meters", format="avro")})
    def avro_readings(rows: DataFrame) -> DataFrame:
        return rows

    first = [{"id": "1", "kwh": 1.5}, {"id": "2", "kwh": None}]
    land_avro(spark, paths, "a.avro", first, "id string, kwh double")
    run_table(spark, paths, avro_readings)
    assert rows_of(spark, paths, "readings") == first
    # The next run's first file still has the old writer schema; the second adds a field, in
    # another position: the schema is the union, and every file is read by name.
    land_avro(spark, paths, "b.avro", [{"id": "3", "kwh": 4.0}], "id string, kwh double")
    land_avro(spark, paths, "c.avro", [{"site": "x", "id": "4", "kwh": 2.0}], "site string, id string, kwh double")
    assert run_table(spark, paths, avro_readings).schema_changes[0] == "added column site string (first in c.avro)"
    want = [{**r, "site": None} for r in first] + [
        {"id": "3", "kwh": 4.0, "site": None},
        {"id": "4", "kwh": 2.0, "site": "x"},
    ]
    assert rows_of(spark, paths, "readings") == want
    # Two new files that disagree on a new field's type: the run stops naming both, writing nothing.
    land_avro(spark, paths, "d.avro", [{"id": "5", "kwh": 1.0, "unit": 1}], "id string, kwh double, unit int")
    land_avro(spark, paths, "e.avro", [{"id": "6", "kwh": 1.0, "unit": "kWh"}], "id string, kwh double, unit string")
    with pytest.raises(LakehouseError, match=r"e\.avro has field unit string where .*d\.avro has int"):
        run_table(spark, paths, avro_readings)
    assert rows_of(spark, paths, "readings") == want


def test_keys_that_look_like_sql_are_names_only(tmp_path: Path, spark: SparkSession) -> None:
    """A landed key holding a back-quote or a dot becomes a column of that very name: quoted
    wherever it reaches SQL (the inferred schema's DDL, the parse, the table's columns). Delta
    itself refuses ' ,;{}()=' in a name without column mapping."""
    paths = LakehousePaths(str(tmp_path / "root"))
    odd = {"id": "1", "a`b": 2, "c.d": "x", "e-f": True}
    land(paths, "a.jsonl", [odd, {"id": "2"}])
    run_table(spark, paths, readings(None))
    rows = {r["id"]: r.asDict() for r in spark.read.format("delta").load(paths.table("readings")).collect()}
    assert rows["1"]["a`b"] == 2 and rows["1"]["c.d"] == "x" and rows["1"]["e-f"] is True
    assert rows["2"]["a`b"] is None
    land(paths, "b.jsonl", [{"id": "3", "g`h": 1}])  # a new one evolves the schema too
    run_table(spark, paths, readings(None))
    assert spark.read.format("delta").load(paths.table("readings")).where("id = '3'").first()["g`h"] == 1
