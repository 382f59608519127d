"""The example Spark Declarative Pipelines project (examples/sdp_orders), whose files hold only
``pyspark.pipelines`` code, materialized with ``dagster asset materialize`` over two landing
rounds, every run a client of one Spark Connect engine; every table is compared with answers
computed here from the landed rows, and the datasets SDP can run with ``spark-pipelines run``
on the same engine with SDP's tables."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from devstack.connect_server import ConnectServer
from devstack.dagster_dev import DagsterDev
from devstack.ports import free_port
from lakehouse_assets.lib.settings import REPO_ROOT
from lakehouse_assets_tests.sdp import orders_answers as answers
from lakehouse_assets_tests.sdp import side_by_side
from lakehouse_assets_tests.sdp.tally import tally
from lakehouse_assets_tests.support.browser import SCREENSHOTS, body_text, shown_names, wait_until

EXAMPLE = REPO_ROOT / "examples" / "sdp_orders"


def materialize_all(root: Path, home: Path, remote: str | None) -> str:
    env = {**os.environ, "LAKEHOUSE_ROOT": str(root), "DAGSTER_HOME": str(home)}
    env.pop("SPARK_REMOTE", None)
    env |= {"SPARK_REMOTE": remote} if remote else {}
    dagster = Path(sys.executable).parent / "dagster"
    command = [str(dagster), "asset", "materialize", "-f", str(EXAMPLE / "definitions.py"), "--select", "*"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def table(spark, root: Path, name: str) -> list[dict]:
    return [r.asDict() for r in spark.read.format("delta").load(str(root / "tables" / name)).collect()]


def rows(spark, path: Path, columns: list[str]) -> Counter[tuple]:
    return Counter(tuple(r) for r in spark.read.format("delta").load(str(path)).select(*columns).collect())


def assert_same_as_spark_pipelines(spark, root: Path, work: Path, remote: str) -> None:
    """``spark-pipelines run`` over the same landed files builds the same tables SDP can run."""
    side_by_side.run_spark_pipelines(side_by_side.sdp_project(work, root / "landing" / "sdp_orders"), remote)
    for dataset in side_by_side.SDP_DATASETS:
        theirs = side_by_side.sdp_table_path(work, dataset)
        columns = spark.read.format("delta").load(str(theirs)).columns
        assert rows(spark, root / "tables" / dataset, columns) == rows(spark, theirs, columns), dataset


def stamp(value) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S")


def latest_metadata(instance: dg.DagsterInstance, asset: str) -> dict:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None and event.asset_materialization is not None
    return {k: getattr(v, "value", v) for k, v in event.asset_materialization.metadata.items()}


def assert_tables_exact(spark, root: Path, eu: list[dict], us: list[dict], changes: list[dict]) -> None:
    # Every table as a multiset: nothing missing, nothing duplicated.
    exact = dict.fromkeys(answers.COMPARED_COLUMNS, (0, 0))
    assert tally(spark, root / "tables", answers.expected_rows(eu, us, changes)) == exact
    silver = answers.silver_orders(eu, us)
    got = table(spark, root, "silver_orders")
    assert len(got) == len(silver)
    assert {(r["order_id"], r["customer_id"], r["amount"], r["region"]) for r in got} == silver
    current = answers.customers_scd1(changes)
    got_current = {(r["customer_id"], r["name"], r["tier"], r["country"], stamp(r["updated_at"])) for r in table(spark, root, "customers")}
    assert got_current == current
    history = table(spark, root, "customers_history")
    got_history = {(r["customer_id"], r["tier"], r["country"], stamp(r["valid_from"]), stamp(r["valid_to"])) for r in history}
    assert len(history) == len(got_history)
    assert got_history == answers.customers_scd2(changes)
    assert all(r["is_current"] == (r["valid_to"] is None) for r in history)
    revenue = {r["customer_id"]: (r["revenue"], r["orders"]) for r in table(spark, root, "customer_revenue")}
    assert revenue == answers.customer_revenue(silver)
    by_country = {r["country"]: r["revenue"] for r in table(spark, root, "revenue_by_country")}
    assert by_country == answers.revenue_by_country(silver, current)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The example's data root and Dagster instance, shared by this module's tests."""
    work = tmp_path_factory.mktemp("sdp_example")
    (work / "dagster").mkdir()
    return work / "root", work / "dagster"


@pytest.mark.slow
def test_example_pipeline_runs_unchanged_and_exact_over_two_rounds(tmp_path: Path, spark, example) -> None:
    for source in (EXAMPLE / "transformations").glob("*.py"):
        text = source.read_text()
        assert "lakehouse_assets" not in text, f"{source.name} must hold only pyspark.pipelines code"
    root, home = example
    with open(tmp_path / "engine.log", "wb") as log, ConnectServer(free_port(), log=log, conf=side_by_side.engine_conf(tmp_path)) as engine:
        run_two_rounds(spark, root, home, engine.url)
        assert_same_as_spark_pipelines(spark, root, tmp_path, engine.url)


def run_two_rounds(spark, root: Path, home: Path, remote: str) -> None:
    landing = root / "landing" / "sdp_orders"
    eu, us, changes = [], [], []
    for round_no in (1, 2):
        new_eu, new_us, new_changes = answers.land_round(landing, round_no)
        eu, us, changes = eu + new_eu, us + new_us, changes + new_changes
        materialize_all(root, home, remote)
        assert_tables_exact(spark, root, eu, us, changes)
        instance = dg.DagsterInstance.from_config(str(home))
        # Streaming tables read only the new files.
        assert latest_metadata(instance, "bronze_orders_eu")["rows_read"] == len(new_eu)
        assert latest_metadata(instance, "bronze_customer_changes")["rows_read"] == len(new_changes)
        assert len(table(spark, root, "bronze_orders_us")) == len(us)
        # The GROUP BY over one dataset is maintained by key; the join is recomputed whole.
        assert latest_metadata(instance, "customer_revenue")["refresh"] == "incremental"
        assert latest_metadata(instance, "revenue_by_country")["refresh"] == "full"
        # What the declared keys promise held, as asset checks.
        for asset, check in (("customers", "unique_customer_id"), ("customer_revenue", "unique_customer_id"),
                             ("customers_history", "scd2_history_valid")):  # fmt: skip
            key = dg.AssetCheckKey(dg.AssetKey(asset), check)
            (latest,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
            assert latest.status.value == "SUCCEEDED", (asset, check, latest.status)
        if round_no == 1:  # a run with nothing new landed (round 2 leaves the UI test its figures)
            versions = {name: len(os.listdir(root / "tables" / name / "_delta_log")) for name in os.listdir(root / "tables")}
            materialize_all(root, home, remote)
            after = {name: len(os.listdir(root / "tables" / name / "_delta_log")) for name in os.listdir(root / "tables")}
            assert after == versions, "a run with nothing new changed a table"


@pytest.mark.slow
def test_the_ui_shows_every_dataset_with_lineage_metadata_and_checks(example, browser) -> None:
    """``dagster dev -f definitions.py`` in headless Chromium; screenshots for the docs."""
    from selenium.webdriver.common.by import By

    root, home = example
    if not (root / "tables").exists():  # run alone: one round of files, one run
        answers.land_round(root / "landing" / "sdp_orders", 1)
        materialize_all(root, home, remote=None)
    datasets = set(answers.COMPARED_COLUMNS)
    with DagsterDev(root=root, home=home, location=("-f", str(EXAMPLE / "definitions.py"))) as dev:
        browser.get(f"{dev.url}/asset-groups")
        browser.execute_script("localStorage.setItem('communityNux', '1')")  # no first-visit dialog
        browser.set_window_size(1600, 1000)
        browser.get(f"{dev.url}/asset-groups")
        wait_until(lambda: datasets <= shown_names(browser), 120, "every dataset in the lineage")
        time.sleep(3)
        assert browser.save_screenshot(str(SCREENSHOTS / "sdp-lineage.png"))
        browser.get(f"{dev.url}/assets/customer_revenue")
        shown = ("incremental", "rows_read", "Row count", "Revenue and order count per customer")
        wait_until(lambda: all(s in body_text(browser) for s in shown), 120, f"the asset page showing {shown}")
        # The run's metadata (refresh, rows read, ...) at the top of the screenshot.
        heading = browser.find_element(By.XPATH, "//*[normalize-space()='Metadata']")
        browser.execute_script("arguments[0].scrollIntoView()", heading)
        time.sleep(2)
        assert browser.save_screenshot(str(SCREENSHOTS / "sdp-asset-page.png"))
        for asset, check in (("customer_revenue", "unique_customer_id"), ("customers_history", "scd2_history_valid")):
            browser.get(f"{dev.url}/assets/{asset}?view=checks")
            wait_until(lambda: check in body_text(browser), 120, f"{asset}'s check {check}")
