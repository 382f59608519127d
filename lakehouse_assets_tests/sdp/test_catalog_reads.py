"""A pipeline reads, by name, a table of Spark's catalog that is not one of its datasets (here
another pipeline's table under the same data root). The view over it equals the join computed
here, and follows a change to that table although no new file landed."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.lib import LakehousePaths, load_spark_pipeline
from lakehouse_assets.lib.declare.inputs import CatalogInput
from lakehouse_assets.lib.sdp.convert import pipeline_tables

SHOP = """from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table
def orders():
    return spark.readStream.format("json").schema("order_id STRING, country STRING, amount DOUBLE").load(
        spark.conf.get("shop.landing")
    )


@dp.materialized_view
def revenue_by_region():
    regions = spark.read.table("country_regions")  # kept by another pipeline: not a dataset here
    return (
        spark.read.table("orders")
        .join(regions, "country", "left")
        .groupBy(F.coalesce("region", F.lit("unknown")).alias("region"))
        .agg(F.round(F.sum("amount"), 2).alias("revenue"))
    )
"""
ORDERS = [("o1", "FR", 10.0), ("o2", "DE", 5.5), ("o3", "US", 7.25), ("o4", "JP", 1.0)]


def expected(regions: dict[str, str]) -> dict[str, float]:
    revenue: dict[str, float] = defaultdict(float)
    for _, country, amount in ORDERS:
        revenue[regions.get(country, "unknown")] += amount
    return {region: round(total, 2) for region, total in revenue.items()}


@pytest.mark.slow
@pytest.mark.gate  # CI's representative of this file (docs/testing.md)
def test_a_catalog_table_is_read_by_name_and_followed(tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    root, landing, project = tmp_path / "root", tmp_path / "elsewhere" / "orders", tmp_path / "shop"
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))
    (project / "transformations").mkdir(parents=True)
    (project / "transformations" / "shop.py").write_text(SHOP)
    spec = project / "spark-pipeline.yml"
    spec.write_text(
        f"name: shop\nstorage: pipeline-storage\nconfiguration:\n  shop.landing: {landing}\nlibraries:\n  - glob:\n      include: transformations/**\n"
    )
    landing.mkdir(parents=True)
    (landing / "orders.json").write_text(
        "".join(json.dumps({"order_id": o, "country": c, "amount": a}) + "\n" for o, c, a in ORDERS)
    )

    view = {t.name: t for t in pipeline_tables(spec)}["revenue_by_region"]
    assert view.inputs["country_regions"] == CatalogInput("country_regions") and view.upstream_tables == ["orders"]

    regions_path = str(root / "tables" / "country_regions")
    defs = load_spark_pipeline(spec, paths=LakehousePaths(str(root)))
    instance = dg.DagsterInstance.ephemeral()
    for regions in ({"FR": "EU", "DE": "EU", "US": "NA"}, {"FR": "EU", "DE": "EU", "US": "NA", "JP": "APAC"}):
        # The other pipeline's table; the second round changes it, and nothing new lands.
        spark.createDataFrame(sorted(regions.items()), "country STRING, region STRING").write.format("delta").mode(
            "overwrite"
        ).save(regions_path)
        result = dg.materialize(list(defs.assets or []), resources=defs.resources, instance=instance, selection="*")
        assert result.success
        got = {
            r.region: r.revenue
            for r in spark.read.format("delta").load(str(root / "tables" / "revenue_by_region")).collect()
        }
        assert got == expected(regions)
