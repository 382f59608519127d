"""Loading SDP projects without running them: datasets, lineage and strategies from the plans,
the component, and one clear message (file and line) for what cannot run."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster.components.testing.utils import component_defs

from lakehouse_assets.lib.declare.sinks import AppendSink, OverwriteSink, RecomputeSink
from lakehouse_assets.lib.engine.errors import LakehouseError
from lakehouse_assets.lib.sdp.component import SparkPipelineComponent
from lakehouse_assets.lib.sdp.convert import pipeline_tables
from lakehouse_assets.lib.settings import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "sdp_orders" / "spark-pipeline.yml"
SPEC = "name: broken\nstorage: storage\nlibraries:\n  - glob:\n      include: transformations/**\n"


@pytest.fixture(autouse=True)
def data_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(tmp_path / "root"))
    return tmp_path / "root"


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "spark-pipeline.yml").write_text(SPEC)
    for name, text in files.items():
        (tmp_path / "transformations").mkdir(exist_ok=True)
        (tmp_path / "transformations" / name).write_text(text)
    return tmp_path / "spark-pipeline.yml"


HEADER = "from pyspark import pipelines as dp\n\n"


def test_example_datasets_lineage_and_strategies() -> None:
    tables = {t.name: t for t in pipeline_tables(EXAMPLE)}
    assert set(tables) == {
        "bronze_orders_eu", "bronze_orders_us", "bronze_customer_changes", "silver_orders",
        "customers", "customers_history", "customer_revenue", "revenue_by_country",
    }  # fmt: skip
    silver = tables["silver_orders"]
    # The temporary view is inlined: silver reads the bronze table under it.
    assert silver.upstream_tables == ["bronze_orders_eu", "bronze_orders_us"]
    assert [f.name for f in silver.flows] == ["us_orders"] and isinstance(silver.sink, AppendSink)
    assert tables["customers_history"].upstream_tables == ["bronze_customer_changes"]
    assert isinstance(tables["customers"].sink, RecomputeSink)
    assert isinstance(tables["customer_revenue"].sink, RecomputeSink)
    assert tables["customer_revenue"].sink.keys == ["customer_id"]  # type: ignore[attr-defined]
    assert isinstance(tables["revenue_by_country"].sink, OverwriteSink)
    assert tables["revenue_by_country"].lookup_tables == ["silver_orders", "customers"]
    assert {t.group for t in tables.values()} == {"sdp_orders"}


def test_component_builds_the_same_assets() -> None:
    defs = component_defs(component=SparkPipelineComponent(spec=str(EXAMPLE)))
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"silver_orders", "customer_revenue", "customers_history"} <= keys
    assert graph.get(dg.AssetKey("customer_revenue")).parent_keys == {dg.AssetKey("silver_orders")}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"a.py": HEADER + "@dp.materialized_view\ndef t():\n    return spark.range(3)\n\n\n"
                  "@dp.materialized_view(name='t')\ndef t2():\n    return spark.range(4)\n"},
         r"a\.py:8: t is defined twice \(first at .*a\.py:3\)"),
        ({"a.py": HEADER + "@dp.materialized_view\ndef t():\n    return spark.read.table('nope')\n"},
         r"a\.py:3: t reads nope, which is not a dataset of this pipeline"),
        ({"a.py": HEADER + "@dp.materialized_view\ndef x():\n    return spark.read.table('y')\n\n\n"
                  "@dp.materialized_view\ndef y():\n    return spark.read.table('x')\n"},
         r"cycle: (x -> y -> x|y -> x -> y)"),
        ({"a.sql": "CREATE MATERIALIZED VIEW m AS SELECT 1"}, r"a\.sql: SQL pipeline files"),
        ({"a.py": HEADER + "@dp.table\ndef t():\n    return spark.readStream.format('json').load('/etc')\n"},
         r"a\.py:3: t reads /etc, outside the data root"),
        ({"a.py": HEADER + "@dp.table\ndef t():\n    return spark.range(3)\n"}, r"a\.py:3: flow t into t reads no stream"),
        ({"a.py": HEADER + "@dp.materialized_view\ndef t():\n    return spark.range(3).collect()\n"},
         r"a\.py:3: t: its function failed while building its query"),
    ],
    ids=["defined-twice", "missing-input", "cycle", "sql-file", "outside-root", "batch-into-streaming-table", "action"],
)
def test_what_cannot_run_is_one_sentence_naming_the_place(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(LakehouseError, match=message):
        pipeline_tables(project(tmp_path, files))
