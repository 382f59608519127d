"""A flow's ``spark_conf`` holds for that flow's query only: a table's own, an ``append_flow``'s,
and the native ``append_flow(spark_conf=)``; the session's settings are back afterwards, and a
setting Spark cannot change at run time stops the flow with one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse_assets.lib import DeclarationError, LakehousePaths, append_flow, landing, streaming_table
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.sdp.convert import pipeline_tables
from lakehouse_assets.lib.spark.deferred import deferred_session
from lakehouse_assets_tests.sdp.test_sdp_loading import HEADER, project

TIME_ZONE = "spark.sql.session.timeZone"


def pipeline(landing_folder: Path) -> str:
    read = f"spark.readStream.format('json').schema('id STRING').load({str(landing_folder)!r})"
    zone = "select('id', F.current_timezone().alias('zone'))"
    return (
        HEADER
        + "from pyspark.sql import functions as F\n\n"
        + (
            f"@dp.table(spark_conf={{'{TIME_ZONE}': 'Asia/Tokyo'}})\n"
            f"def zones():\n    return {read}.{zone}\n\n\n"
            f"@dp.append_flow(target='zones', spark_conf={{'{TIME_ZONE}': 'America/Lima'}})\n"
            f"def lima():\n    return {read}.{zone}\n\n\n"
            f"@dp.table\ndef plain():\n    return {read}.{zone}\n"
        )
    )


@pytest.mark.unit
def test_the_settings_of_each_flow_are_carried_to_its_run(tmp_path: Path) -> None:
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"a.py": pipeline(tmp_path / "in")}))}
    runs = {r.checkpoint_name: r.spark_conf for r in tables["zones"].flow_runs()}
    assert runs == {"zones": {TIME_ZONE: "Asia/Tokyo"}, "zones/flows/lima": {TIME_ZONE: "America/Lima"}}
    assert tables["plain"].spark_conf == {}


def test_each_flow_runs_with_its_own_settings_and_the_session_keeps_its_own(tmp_path: Path, spark) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps({"id": "a"}) + "\n")
    (tmp_path / "p").mkdir()
    tables = {t.name: t for t in pipeline_tables(project(tmp_path / "p", {"a.py": pipeline(folder)}))}
    paths = LakehousePaths(str(tmp_path / "root"))
    session_zone = spark.conf.get(TIME_ZONE)
    assert session_zone not in ("Asia/Tokyo", "America/Lima")
    for name in ("zones", "plain"):
        run_table(spark, paths, tables[name])
    zones = spark.read.format("delta").load(paths.table("zones"))
    assert sorted(r.zone for r in zones.collect()) == ["America/Lima", "Asia/Tokyo"]
    assert [r.zone for r in spark.read.format("delta").load(paths.table("plain")).collect()] == [session_zone]
    assert spark.conf.get(TIME_ZONE) == session_zone


def test_a_setting_spark_cannot_change_stops_the_flow_in_one_sentence(tmp_path: Path, spark) -> None:
    folder = tmp_path / "landing" / "orders"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("one\n")

    def orders(lines: DataFrame) -> DataFrame:
        return lines.select(F.col("value").alias("line"))

    table = streaming_table(
        group="g",
        inputs={"lines": landing("orders")},
        flows=[append_flow("static", inputs={}, spark_conf={"spark.sql.warehouse.dir": str(tmp_path / "w")})],
    )(orders)
    paths = LakehousePaths(str(tmp_path))
    with pytest.raises(
        DeclarationError,
        match=r"^orders/flows/static: spark_conf spark\.sql\.warehouse\.dir=.* cannot be set for one flow: ",
    ):
        run_table(spark, paths, table)
    assert [r.line for r in spark.read.format("delta").load(paths.table("orders")).collect()] == ["one"]


def test_a_flow_reading_files_itself_runs_on_the_runs_session_even_one_started_late(tmp_path: Path, spark) -> None:
    """A Dagster step hands the engine a session started on first use (:mod:`~lakehouse_assets.lib.spark.deferred`),
    which no thread has made Spark's active one: a flow that reads files itself (no DataFrame
    handed to it) must still build its query on it, as ``dagster asset materialize`` of the SDP
    example does embedded."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps({"id": "a"}) + "\n" + json.dumps({"id": "b"}) + "\n")
    (tmp_path / "p").mkdir()
    tables = {t.name: t for t in pipeline_tables(project(tmp_path / "p", {"a.py": pipeline(folder)}))}
    paths = LakehousePaths(str(tmp_path / "root"))
    started: list[SparkSession] = []

    def start() -> SparkSession:
        started.append(spark)
        return spark

    spark._jvm.SparkSession.clearActiveSession()  # type: ignore[union-attr]
    try:
        assert SparkSession.getActiveSession() is None
        run_table(deferred_session(start), paths, tables["plain"])
    finally:
        spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)  # type: ignore[union-attr]
    assert started == [spark]
    assert sorted(r.id for r in spark.read.format("delta").load(paths.table("plain")).collect()) == ["a", "b"]
