"""Databricks Lakeflow code (``import dlt``) loads as written: the same datasets, strategies,
expectations and lineage as its ``pyspark.pipelines`` equivalent, and one sentence for what has
no meaning here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lakehouse_assets.lib.declare.sinks import AppendSink, OverwriteSink, RecomputeSink
from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.convert import pipeline_tables
from lakehouse_assets_tests.sdp.test_sdp_loading import project

pytestmark = pytest.mark.unit

LAKEFLOW = """import dlt
from pyspark.sql import functions as F


@dlt.table(comment="Orders as they came.")
@dlt.expect_or_drop("valid_amount", "amount > 0")
@dlt.expect("has_customer", "customer_id IS NOT NULL")
def orders():
    return spark.readStream.format("json").schema("order_id STRING, customer_id STRING, amount DOUBLE").load("landing")


@dlt.view
def changes():
    return spark.readStream.format("json").schema("customer_id STRING, tier STRING, ts TIMESTAMP").load("crm")


@dlt.table
def customer_changes():
    return dlt.read_stream("changes")


dlt.create_streaming_table("customers")
dlt.apply_changes(target="customers", source="customer_changes", keys=["customer_id"], sequence_by="ts",
                  stored_as_scd_type=2)


@dlt.table(comment="Revenue per customer.")
def revenue():
    return dlt.read("orders").groupBy("customer_id").agg(F.sum("amount").alias("revenue"))
"""


def test_lakeflow_code_declares_the_same_datasets_as_written(tmp_path: Path) -> None:
    before = sys.modules.get("dlt")
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"lakeflow.py": LAKEFLOW}))}
    assert set(tables) == {"orders", "customer_changes", "customers", "revenue"}
    orders = tables["orders"]
    assert isinstance(orders.sink, AppendSink) and orders.description == "Orders as they came."
    assert {(e.name, e.action) for e in orders.expectations} == {("valid_amount", "drop"), ("has_customer", "warn")}
    # @dlt.table over a stream is a streaming table, over a batch query a materialized view
    # (here a GROUP BY over one dataset: recomputed by key).
    assert isinstance(tables["customer_changes"].sink, AppendSink)
    assert isinstance(tables["revenue"].sink, RecomputeSink) and tables["revenue"].upstream_tables == ["orders"]
    assert tables["customers"].upstream_tables == ["customer_changes"]
    assert "scd2_history_valid" in {c.name for c in tables["customers"].checks}
    assert sys.modules.get("dlt") is before  # another package named dlt is untouched afterwards


def test_a_once_flow_is_a_backfill_that_reads_snapshots(tmp_path: Path) -> None:
    once = ('@dlt.append_flow(target="orders", once=True)\ndef old():\n'
            '    return spark.read.format("json").schema("order_id STRING, customer_id STRING, amount DOUBLE").load("h")\n')  # fmt: skip
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"lakeflow.py": LAKEFLOW + "\n\n" + once}))}
    flows = tables["orders"].flow_runs()
    assert [(f.flow, f.once) for f in flows] == [(None, False), ("old", True)]
    streaming = once.replace("spark.read.", "spark.readStream.")
    (tmp_path / "s").mkdir()
    with pytest.raises(DeclarationError, match=r"lakeflow\.py:\d+: once-flow old into orders reads a stream"):
        pipeline_tables(project(tmp_path / "s", {"lakeflow.py": LAKEFLOW + "\n\n" + streaming}))


def test_a_batch_lakeflow_table_that_is_not_a_group_by_is_recomputed_whole(tmp_path: Path) -> None:
    body = LAKEFLOW.replace('dlt.read("orders").groupBy("customer_id").agg(F.sum("amount").alias("revenue"))',
                            'dlt.read("orders").where("amount > 100")')  # fmt: skip
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"lakeflow.py": body}))}
    assert isinstance(tables["revenue"].sink, OverwriteSink)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '@dlt.table(path="/mnt/x")\ndef t():\n    return dlt.read_stream("orders")\n',
            r"lakeflow\.py:\d+: @dlt.table t: path= is a Databricks",
        ),
        (
            'dlt.create_streaming_table("s", expect_all={"a": "x > 0"})\n',
            r"lakeflow\.py:\d+: dlt.create_streaming_table\('s'\): expectations here go on the functions",
        ),
        (
            'dlt.apply_changes_from_snapshot("s", source=lambda v: None, keys=["k"])\n',
            r"lakeflow\.py:\d+: create_auto_cdc_from_snapshot_flow\('s'\): the source is a dataset's name here; a function returning historical snapshots is not supported",
        ),
    ],
    ids=["path", "expectations-on-create", "historical-snapshots"],
)
def test_what_has_no_meaning_here_is_one_sentence(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(DeclarationError, match=message):
        pipeline_tables(project(tmp_path, {"lakeflow.py": LAKEFLOW + "\n\n" + line}))


def test_apply_changes_where_keeps_only_the_changes_meeting_it(tmp_path: Path) -> None:
    line = (
        'dlt.create_streaming_table("s")\ndlt.apply_changes(target="s", source="orders", keys=["order_id"], '
        'sequence_by="amount", where="amount > 0")\n'
    )
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"lakeflow.py": LAKEFLOW + "\n\n" + line}))}
    assert tables["s"].sink.finalize.flow.where == "amount > 0"  # type: ignore[attr-defined]


PAYMENTS_VIEW = """
@dlt.view
def payments_raw():
    return spark.readStream.format("json").schema("account STRING, balance DOUBLE, seq LONG, op STRING").load("payments")


dlt.create_streaming_table("accounts_history")
dlt.apply_changes(target="accounts_history", source="payments_raw", keys=["account"], sequence_by="seq",
                  apply_as_deletes="op = 'DELETE'", except_column_list=["op"], stored_as_scd_type=2)
"""


def test_apply_changes_from_a_view_over_raw_files_keeps_the_changes_first(tmp_path: Path) -> None:
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"lakeflow.py": LAKEFLOW + PAYMENTS_VIEW}))}
    changes, history = tables["accounts_history_changes"], tables["accounts_history"]
    assert isinstance(changes.sink, AppendSink) and changes.upstream_tables == []
    assert changes.tags == {"sdp/dataset": "auto_cdc_changes"}
    assert isinstance(history.sink, RecomputeSink) and history.upstream_tables == ["accounts_history_changes"]
    assert history.streamed_tables == ["accounts_history_changes"]
    assert "scd2_history_valid" in {c.name for c in history.checks}


def test_apply_changes_from_a_view_over_auto_loader_reads_the_landing_folder(tmp_path: Path) -> None:
    view = PAYMENTS_VIEW.replace(
        'spark.readStream.format("json").schema("account STRING, balance DOUBLE, seq LONG, op STRING").load("payments")',
        'spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")'
        '.schema("account STRING, balance DOUBLE, seq LONG, op STRING").load("payments")',
    )
    tables = {t.name: t for t in pipeline_tables(project(tmp_path, {"lakeflow.py": LAKEFLOW + view}))}
    (loaded,) = tables["accounts_history_changes"].inputs.values()
    assert (loaded.kind, loaded.path, loaded.format) == ("landing", "payments", "json")
    assert tables["accounts_history"].upstream_tables == ["accounts_history_changes"]


def test_a_changes_table_name_already_taken_is_one_sentence(tmp_path: Path) -> None:
    taken = PAYMENTS_VIEW + '\n\n@dlt.table\ndef accounts_history_changes():\n    return dlt.read_stream("orders")\n'
    with pytest.raises(DeclarationError, match="named accounts_history_changes, which this pipeline already defines"):
        pipeline_tables(project(tmp_path, {"lakeflow.py": LAKEFLOW + taken}))
