"""Loading SDP projects without running them: datasets, lineage and strategies from the plans,
the component, and one clear message (file and line) for what cannot run."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster.components.testing.utils import component_defs

from devstack import REPO_ROOT
from lakehouse_assets.lib.declare.sinks import AppendSink, DeltaPathSink, KafkaSink, OverwriteSink, RecomputeSink
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.sdp.component import SparkPipelineComponent
from lakehouse_assets.lib.sdp.convert import pipeline_tables

pytestmark = pytest.mark.unit

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
        "customers", "customers_history", "customer_revenue", "revenue_by_country", "orders_export",
    }  # fmt: skip
    # The sink is an asset reading silver_orders; its rows go to the path the spec configures.
    export = tables["orders_export"]
    assert export.upstream_tables == ["silver_orders"] and isinstance(export.sink, DeltaPathSink)
    assert export.sink.path.endswith("/exports/orders")
    assert tables["customers_history"].cluster_by == ["customer_id"]
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
    # What the declared keys promise is checked after every run.
    checks = {name: {c.name for c in t.checks} for name, t in tables.items()}
    assert "unique_customer_id" in checks["customers"] and "unique_customer_id" in checks["customer_revenue"]
    assert "scd2_history_valid" in checks["customers_history"]
    assert not any(c.startswith("unique") for c in checks["revenue_by_country"])


def test_component_builds_the_same_assets() -> None:
    defs = component_defs(component=SparkPipelineComponent(spec=str(EXAMPLE)))
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"silver_orders", "customer_revenue", "customers_history"} <= keys
    assert graph.get(dg.AssetKey("customer_revenue")).parent_keys == {dg.AssetKey("silver_orders")}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {
                "a.py": HEADER + "@dp.materialized_view\ndef t():\n    return spark.range(3)\n\n\n"
                "@dp.materialized_view(name='t')\ndef t2():\n    return spark.range(4)\n"
            },
            r"a\.py:8: t is defined twice \(first at .*a\.py:3\)",
        ),
        (
            {"a.py": HEADER + "@dp.table\ndef t():\n    return spark.readStream.table('nope')\n"},
            r"a\.py:3: t reads nope, which is not a dataset of this pipeline \(a stream of it cannot be read\)",
        ),
        (
            {
                "a.py": HEADER + "@dp.materialized_view\ndef x():\n    return spark.read.table('y')\n\n\n"
                "@dp.materialized_view\ndef y():\n    return spark.read.table('x')\n"
            },
            r"cycle: (x -> y -> x|y -> x -> y)",
        ),
        (
            {"a.sql": "\n-- a view of nothing\nCREATE MATERIALIZED VIEW m AS SELECT 1"},
            r"a\.sql:3: the query reads no dataset",
        ),
        (
            {"a.py": HEADER + "@dp.table\ndef t():\n    return spark.range(3)\n"},
            r"a\.py:3: flow t into t reads no stream",
        ),
        (
            {"a.py": HEADER + "@dp.materialized_view(format='parquet')\ndef t():\n    return spark.range(3)\n"},
            r"a\.py:3: t: format='parquet'; tables here are Delta tables",
        ),
        (
            {"a.py": HEADER + "@dp.materialized_view\ndef t():\n    return spark.range(3).collect()\n"},
            r"a\.py:3: t: its function failed while building its query",
        ),
    ],
    ids=["defined-twice", "missing-input", "cycle", "sql-file", "batch-into-streaming-table", "format", "action"],
)
def test_what_cannot_run_is_one_sentence_naming_the_place(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(LakehouseError, match=message):
        pipeline_tables(project(tmp_path, files))


def test_raw_files_outside_the_data_root_are_read_where_they_are(tmp_path: Path, data_root: Path) -> None:
    outside = tmp_path / "elsewhere" / "orders"
    body = f"@dp.table\ndef raw():\n    return spark.readStream.format('json').schema('a INT').load({str(outside)!r})\n"
    (raw,) = pipeline_tables(project(tmp_path, {"a.py": HEADER + body}))
    assert raw.name == "raw" and isinstance(raw.sink, AppendSink)
    assert data_root not in outside.parents


def test_a_delta_sink_is_an_asset_fed_by_its_flows(tmp_path: Path) -> None:
    sink = ("dp.create_sink('export', 'delta', {'path': '/tmp/export'})\n\n\n"
            "@dp.append_flow(target='export')\ndef send():\n    return spark.readStream.table('raw')\n")  # fmt: skip
    raw = "@dp.table\ndef raw():\n    return spark.readStream.format('json').schema('a INT').load('landing')\n\n\n"
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"a.py": HEADER + raw + sink}))}
    assert isinstance(tables["export"].sink, DeltaPathSink) and tables["export"].sink.path == "/tmp/export"
    assert tables["export"].upstream_tables == ["raw"] and not tables["export"].writes_delta
    kafka = sink.replace("'delta', {'path': '/tmp/export'}", "'kafka', {'topic': 't', 'kafka.linger.ms': '5'}")
    (tmp_path / "k").mkdir()
    (to_kafka,) = [
        t for t in pipeline_tables(project(tmp_path / "k", {"a.py": HEADER + raw + kafka})) if t.name == "export"
    ]
    assert to_kafka.sink == KafkaSink("t", None, None, {"kafka.linger.ms": "5"}) and not to_kafka.writes_delta
    parquet = sink.replace("'delta', {'path': '/tmp/export'}", "'parquet', {'path': '/tmp/export'}")
    (tmp_path / "p").mkdir()
    with pytest.raises(
        LakehouseError, match=r"a\.py:\d+: sink export: a sink here is a Delta table at a path, .* or a Kafka topic"
    ):
        pipeline_tables(project(tmp_path / "p", {"a.py": HEADER + raw + parquet}))


def test_a_column_of_any_session_names_its_column() -> None:
    from lakehouse_assets.lib.sdp.graph import column_name

    class ForeignColumn:  # a Column whose internals are neither Connect's nor classic's
        def __repr__(self) -> str:
            return "Column<'seq'>"

    assert column_name(ForeignColumn(), "sequence_by", None) == "seq"  # type: ignore[arg-type]
    with pytest.raises(LakehouseError, match="sequence_by must name a column"):
        column_name(3, "sequence_by", None)  # type: ignore[arg-type]


def test_dp_streaming_table_is_a_streaming_table(tmp_path: Path) -> None:
    body = (
        "@dp.streaming_table\ndef raw():\n    return spark.readStream.format('json').schema('a INT').load('landing')\n"
    )
    (raw,) = pipeline_tables(project(tmp_path, {"a.py": HEADER + body}))
    assert raw.name == "raw" and isinstance(raw.sink, AppendSink)
    import pyspark.pipelines

    assert not hasattr(pyspark.pipelines, "streaming_table")  # only while the files load


def tables_of(tmp_path: Path, body: str) -> dict:
    return {
        t.name: t
        for t in pipeline_tables(
            project(tmp_path, {"a.py": HEADER + "from pyspark.sql import Window, functions as F\n" + body})
        )
    }


BRONZE = (
    "@dp.table\ndef b():\n    return spark.readStream.format('json').schema('k STRING, v INT').load('landing')\n\n\n"
)


@pytest.mark.parametrize(
    ("query", "incremental"),
    [
        ("spark.read.table('b').groupBy('k').agg(F.sum('v').alias('s'))", True),
        (
            "spark.read.table('b').where('v > 0').groupBy('k').agg(F.sum('v').alias('s')).withColumn('t', F.lit(1))",
            True,
        ),
        # HAVING: a key whose new rows alone do not pass would never be recomputed.
        ("spark.read.table('b').groupBy('k').agg(F.sum('v').alias('s')).where('s > 100')", False),
        (
            "spark.read.table('b').withColumn('w', F.sum('v').over(Window.partitionBy())).groupBy('k').agg(F.max('w'))",
            False,
        ),
        ("spark.read.table('b').withColumn('k', F.upper('k')).groupBy('k').agg(F.sum('v').alias('s'))", False),
        ("spark.read.table('b').groupBy().agg(F.sum('v').alias('s'))", False),
    ],
    ids=["group-by", "filter-below", "having", "window", "key-redefined", "global"],
)
def test_a_materialized_view_is_incremental_only_when_each_key_depends_on_its_own_rows(
    tmp_path: Path, query: str, incremental: bool
) -> None:
    view = tables_of(tmp_path, BRONZE + f"@dp.materialized_view\ndef m():\n    return {query}\n")["m"]
    assert isinstance(view.sink, RecomputeSink if incremental else OverwriteSink)


def test_flows_keep_their_checkpoints_by_name_whatever_their_order(tmp_path: Path) -> None:
    flow = "@dp.append_flow(target='t')\ndef {0}():\n    return spark.readStream.table('b')\n\n\n"
    names = []
    for order in (("x", "y"), ("y", "x")):
        folder = tmp_path / "".join(order)
        folder.mkdir()
        body = BRONZE + "dp.create_streaming_table('t')\n\n\n" + "".join(flow.format(n) for n in order)
        names.append(sorted(f.checkpoint_name for f in tables_of(folder, body)["t"].flow_runs()))
    assert names[0] == names[1] == ["t/flows/x", "t/flows/y"]


def test_auto_cdc_from_a_view_must_keep_the_key(tmp_path: Path) -> None:
    cdc = (
        "dp.create_streaming_table('t')\ndp.create_auto_cdc_flow(target='t', source='v', keys=['k'], sequence_by='v')\n"
    )
    keeps = BRONZE + "@dp.temporary_view\ndef v():\n    return spark.readStream.table('b').where('v > 0')\n\n\n" + cdc
    (tmp_path / "keeps").mkdir()
    assert tables_of(tmp_path / "keeps", keeps)["t"].upstream_tables == ["b"]
    rewrites = (
        BRONZE
        + "@dp.temporary_view\ndef v():\n    return spark.readStream.table('b').withColumn('k', F.upper('k'))\n\n\n"
        + cdc
    )
    (tmp_path / "rewrites").mkdir()
    with pytest.raises(LakehouseError, match=r"reads the view v, which must be row-wise operators .* keep k"):
        tables_of(tmp_path / "rewrites", rewrites)


def test_a_dataset_read_with_options_is_refused(tmp_path: Path) -> None:
    body = BRONZE + "@dp.table\ndef t():\n    return spark.readStream.option('skipChangeCommits', 'true').table('b')\n"
    with pytest.raises(LakehouseError, match=r"a\.py:\d+: t reads b with options"):
        tables_of(tmp_path, body)


def test_a_materialized_view_with_expectations_is_recomputed_whole(tmp_path: Path) -> None:
    body = BRONZE + (
        "from lakehouse_assets.lib import dp as ldp\n\n\n@dp.materialized_view\n@ldp.expect_or_drop('positive', 's > 0')\n"
        "def m():\n    return spark.read.table('b').groupBy('k').agg(F.sum('v').alias('s'))\n"
    )
    view = tables_of(tmp_path, body)["m"]
    assert isinstance(view.sink, OverwriteSink) and [e.name for e in view.expectations] == ["positive"]


def test_lakeflow_view_read_and_read_stream(tmp_path: Path) -> None:
    body = BRONZE + (
        "from lakehouse_assets.lib import dp as ldp\n\n\n@ldp.view\ndef v():\n    return ldp.read_stream('b')\n\n\n"
        "@dp.table\ndef s():\n    return spark.readStream.table('v').join(ldp.read('m'), 'k')\n\n\n"
        "@dp.materialized_view\ndef m():\n    return ldp.read('b').groupBy('k').count()\n"
    )
    tables = tables_of(tmp_path, body)
    assert "v" not in tables
    assert tables["s"].streamed_tables == ["b"] and tables["s"].lookup_tables == ["m"]
