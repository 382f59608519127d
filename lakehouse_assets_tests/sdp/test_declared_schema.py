"""A dataset's ``schema=`` is enforced: the table gets the declared types and comments, and a
query whose columns differ stops its run with one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakehouse_assets.lib import LakehouseError, LakehousePaths
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.sdp.convert import pipeline_tables
from lakehouse_assets.lib.sdp.declared_schema import DeclaredSchema
from lakehouse_assets_tests.sdp.test_sdp_loading import HEADER, project


def pipeline(landing: Path) -> str:
    read = f"spark.readStream.format('json').schema('order_id STRING, amount DOUBLE').load({str(landing)!r})"
    return HEADER + (
        "@dp.table(schema=\"order_id STRING NOT NULL COMMENT 'the order', AMOUNT DECIMAL(10,2)\")\n"
        f"def orders():\n    return {read}\n\n\n"
        "dp.create_streaming_table('amounts', schema='amount DECIMAL(10,2)')\n\n\n"
        "@dp.append_flow(target='amounts')\ndef amounts_flow():\n    return spark.readStream.table('orders')\n"
    )


@pytest.mark.unit
def test_a_declared_schema_wraps_every_flow(tmp_path: Path) -> None:
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"a.py": pipeline(tmp_path / "in")}))}
    assert isinstance(tables["orders"].transform, DeclaredSchema)
    assert all(isinstance(r.transform, DeclaredSchema) for r in tables["amounts"].flow_runs())


def test_the_table_gets_the_declared_types_and_a_mismatch_is_one_sentence(tmp_path: Path, spark) -> None:
    landing = tmp_path / "in"
    landing.mkdir()
    (landing / "a.json").write_text("".join(json.dumps(r) + "\n" for r in [{"order_id": "o1", "amount": 10.125}]))
    (tmp_path / "p").mkdir()
    tables = {t.name: t for t in pipeline_tables(project(tmp_path / "p", {"a.py": pipeline(landing)}))}
    paths = LakehousePaths(str(tmp_path / "root"))
    run_table(spark, paths, tables["orders"])
    table = spark.read.format("delta").load(paths.table("orders"))
    assert [(f.name, f.dataType.simpleString()) for f in table.schema.fields] == [
        ("order_id", "string"),
        ("AMOUNT", "decimal(10,2)"),
    ]
    assert table.schema["order_id"].metadata.get("comment") == "the order"
    assert [tuple(r) for r in table.collect()] == [("o1", __import__("decimal").Decimal("10.13"))]
    with pytest.raises(
        LakehouseError,
        match="amounts: its query's columns do not match its schema=: missing none; not declared order_id",
    ):
        run_table(spark, paths, tables["amounts"])
