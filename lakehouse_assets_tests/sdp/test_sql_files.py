"""SQL pipeline files load as spark-pipelines reads them: one dataset or flow per statement, the
lineage from the datasets each query names, one sentence with file and line for what cannot run."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse_assets.lib.declare.sinks import AppendSink, OverwriteSink
from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.convert import pipeline_tables
from lakehouse_assets.lib.sdp.declared_schema import DeclaredSchema
from lakehouse_assets.lib.sdp.sql_files import datasets_read, statements
from lakehouse_assets_tests.sdp.test_sdp_loading import project

pytestmark = pytest.mark.unit

SPEC = Path(__file__).parent / "sql_pipeline" / "spark-pipeline.yml"


def test_statements_split_outside_quotes_and_comments() -> None:
    text = "-- c;\nSELECT ';' AS a;\n/* x;\n y */ SELECT `b;c`\n FROM t;\n\nSELECT 3"
    assert statements(text) == [(2, "SELECT ';' AS a"), (4, "SELECT `b;c`\n FROM t"), (7, "SELECT 3")]


def test_set_is_a_setting_of_the_flows_after_it_and_a_column_list_the_schema(tmp_path: Path) -> None:
    sql = (
        "CREATE MATERIALIZED VIEW src AS SELECT k FROM raw;\n"
        "SET spark.sql.shuffle.partitions = 3;\n"
        "CREATE MATERIALIZED VIEW totals (k STRING COMMENT 'the key', n BIGINT, CONSTRAINT some EXPECT (n > 0))\n"
        "  AS SELECT k, COUNT(*) AS n FROM src GROUP BY k"
    )
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"a.sql": sql, "raw.py": RAW}))}
    assert tables["src"].spark_conf == {} and tables["totals"].spark_conf == {"spark.sql.shuffle.partitions": "3"}
    totals = tables["totals"]
    assert isinstance(totals.transform, DeclaredSchema)
    assert totals.transform.schema == "k STRING COMMENT 'the key', n BIGINT"
    assert [e.name for e in totals.expectations] == ["some"]


RAW = (
    "from pyspark import pipelines as dp\nfrom pyspark.sql import SparkSession\n\n\n"
    "@dp.materialized_view\ndef raw():\n    return SparkSession.active().read.json('/nowhere')\n"
)


def test_a_query_reads_each_dataset_as_a_stream_or_a_snapshot() -> None:
    query = "WITH c AS (SELECT * FROM STREAM(a)) SELECT * FROM c JOIN b ON c.k = b.k JOIN STREAM d x ON x.k = c.k"
    assert datasets_read(query, "f.sql:1") == {"a": True, "b": False, "d": True}
    with pytest.raises(DeclarationError, match=r"f\.sql:1: the query reads a both as a stream and as a snapshot"):
        datasets_read("SELECT * FROM STREAM(a) JOIN a ON 1 = 1", "f.sql:1")


def test_a_sql_file_declares_datasets_flows_and_lineage() -> None:
    tables = {t.name: t for t in pipeline_tables(SPEC)}
    assert set(tables) == {
        "bronze_orders",
        "orders_clean",
        "revenue",
        "big_orders",
        "customer_latest",
        "customer_history",
    }
    # cdc.sql: AUTO CDC INTO and APPLY CHANGES INTO, each an SCD sink over bronze_orders' stream
    for name, scd in (("customer_latest", 1), ("customer_history", 2)):
        assert tables[name].streamed_tables == ["bronze_orders"] and tables[name].sink.kind == "recompute"
        assert tables[name].sink.finalize.flow.stored_as_scd_type == scd  # type: ignore[attr-defined]
    clean = tables["orders_clean"]
    assert isinstance(clean.sink, AppendSink) and clean.upstream_tables == ["bronze_orders"]
    assert clean.description == "Orders of some value; it's the silver table."
    assert clean.cluster_by == ["customer_id"] and clean.partition_by == []
    assert {(e.name, e.condition, e.action) for e in clean.expectations} == {
        ("positive_amount", "amount > 0", "drop"), ("known_customer", "customer_id IS NOT NULL", "warn")}  # fmt: skip
    assert [(e.name, e.action) for e in tables["revenue"].expectations] == [("some_orders", "warn")]
    assert isinstance(tables["revenue"].sink, OverwriteSink) and tables["revenue"].lookup_tables == ["orders_clean"]
    # the temporary view is inlined: the flow reads the table under it
    assert tables["big_orders"].upstream_tables == ["orders_clean"]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE TABLE t AS SELECT 1", r"a\.sql:1: not a pipeline statement"),
        ("\nCREATE MATERIALIZED VIEW m AS SELECT FROM WHERE", r"a\.sql:2: the query does not parse"),
        ("CREATE MATERIALIZED VIEW m", r"a\.sql:1: materialized view m has no query"),
        ("CREATE STREAMING TABLE s LOCATION '/x' AS SELECT * FROM STREAM(m)", r"a\.sql:1: cannot read 'LOCATION'"),
        (
            "CREATE STREAMING TABLE s PARTITIONED BY (a) CLUSTER BY (b)",
            r"a\.sql:1: s is partitioned or clustered, not both",
        ),
        (
            "CREATE STREAMING TABLE s (CONSTRAINT c EXPECT (a > 0) ON VIOLATION QUARANTINE ROW)",
            r"a\.sql:1: cannot read 'CONSTRAINT",
        ),
    ],
    ids=[
        "not-a-pipeline-statement",
        "parse-error",
        "no-query",
        "unknown-clause",
        "partitioned-and-clustered",
        "unknown-violation",
    ],
)
def test_what_cannot_run_is_one_sentence_naming_file_and_line(tmp_path: Path, sql: str, message: str) -> None:
    with pytest.raises(DeclarationError, match=message):
        pipeline_tables(project(tmp_path, {"a.sql": sql}))
