"""The example Spark Declarative Pipelines project (examples/sdp_orders), whose files hold only
``pyspark.pipelines`` code, materialized with ``dagster asset materialize`` over two landing
rounds, every run a client of one Spark Connect engine; every table is compared with answers
computed here from the landed rows, and the datasets SDP can run with ``spark-pipelines run``
on the same engine with SDP's tables."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from devstack import REPO_ROOT
from devstack.connect_server import ConnectServer
from devstack.dagster_dev import DagsterDev
from devstack.ports import free_port
from lakehouse_assets_tests.support.browser import SCREENSHOTS, body_text, shown_names, wait_until
from verification import orders_answers as answers
from verification import side_by_side
from verification.processes import run_bounded
from verification.tally import tally

EXAMPLE = REPO_ROOT / "examples" / "sdp_orders"


def materialize_all(root: Path, home: Path, remote: str | None) -> str:
    env = {**os.environ, "LAKEHOUSE_ROOT": str(root), "DAGSTER_HOME": str(home)}
    env.pop("SPARK_REMOTE", None)
    env |= {"SPARK_REMOTE": remote} if remote else {}
    dagster = Path(sys.executable).parent / "dagster"
    command = [str(dagster), "asset", "materialize", "-f", str(EXAMPLE / "definitions.py"), "--select", "*"]
    done = run_bounded(command, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def materialize_killed(root: Path, home: Path, remote: str) -> None:
    """A run SIGKILLed (its whole process group) once ``silver_orders`` has committed new rows,
    so some tables are written and some not."""
    env = {**os.environ, "LAKEHOUSE_ROOT": str(root), "DAGSTER_HOME": str(home), "SPARK_REMOTE": remote}
    dagster = Path(sys.executable).parent / "dagster"
    command = [str(dagster), "asset", "materialize", "-f", str(EXAMPLE / "definitions.py"), "--select", "*"]
    log = root / "tables" / "silver_orders" / "_delta_log"
    before = len(list(log.glob("*.json")))
    child = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 300
        while len(list(log.glob("*.json"))) == before and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert child.poll() is None, "the run ended before it could be killed: nothing was tested"
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


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


def clustering_columns(table_path: Path) -> list[list[str]] | None:
    """The clustering columns the table's Delta log records (its ``delta.clustering`` domain)."""
    found = None
    for commit in sorted((table_path / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            domain = json.loads(line).get("domainMetadata")
            if domain and domain["domain"] == "delta.clustering" and not domain.get("removed"):
                found = json.loads(domain["configuration"])["clusteringColumns"]
    return found


def stamp(value) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S")


ROUND_FIGURES = ("bronze_orders_eu", "bronze_customer_changes", "customer_revenue", "revenue_by_country")


def materialization_ids(instance: dg.DagsterInstance) -> set[int]:
    """The materializations recorded so far of the assets whose figures each round checks."""
    return {
        r.storage_id for a in ROUND_FIGURES for r in instance.fetch_materializations(dg.AssetKey(a), limit=1000).records
    }


def new_metadata(instance: dg.DagsterInstance, asset: str, seen: set[int]) -> list[dict]:
    """The metadata of ``asset``'s materializations not in ``seen`` (this round's runs)."""
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=1000).records
    return [{k: getattr(v, "value", v) for k, v in r.asset_materialization.metadata.items()}
            for r in records if r.storage_id not in seen and r.asset_materialization]  # fmt: skip


def assert_tables_exact(spark, root: Path, eu: list[dict], us: list[dict], changes: list[dict]) -> None:
    # Every table as a multiset: nothing missing, nothing duplicated.
    exact = dict.fromkeys(answers.COMPARED_COLUMNS, (0, 0))
    assert tally(spark, root / "tables", answers.expected_rows(eu, us, changes)) == exact
    silver = answers.silver_orders(eu, us)
    got = table(spark, root, "silver_orders")
    assert len(got) == len(silver)
    assert {(r["order_id"], r["customer_id"], r["amount"], r["region"]) for r in got} == silver
    current = answers.customers_scd1(changes)
    got_current = {
        (r["customer_id"], r["name"], r["tier"], r["country"], stamp(r["updated_at"]))
        for r in table(spark, root, "customers")
    }
    assert got_current == current
    history = table(spark, root, "customers_history")
    got_history = {
        (r["customer_id"], r["tier"], r["country"], stamp(r["valid_from"]), stamp(r["valid_to"])) for r in history
    }
    assert len(history) == len(got_history)
    assert got_history == answers.customers_scd2(changes)
    assert all(r["is_current"] == (r["valid_to"] is None) for r in history)
    revenue = {r["customer_id"]: (r["revenue"], r["orders"]) for r in table(spark, root, "customer_revenue")}
    assert revenue == answers.customer_revenue(silver)
    by_country = {r["country"]: r["revenue"] for r in table(spark, root, "revenue_by_country")}
    assert by_country == answers.revenue_by_country(silver, current)


def assert_read_by_name(spark, root: Path, remote: str) -> None:
    """A client of the engine reads a dataset by its name alone (the SQL command line)."""
    env = {**os.environ, "LAKEHOUSE_ROOT": str(root), "SPARK_REMOTE": remote}
    query = "SELECT count(*) AS customers, sum(orders) AS orders FROM customer_revenue"
    done = subprocess.run(
        [sys.executable, "-m", "lakehouse_assets.sql", query], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    by_path = spark.read.format("delta").load(str(root / "tables" / "customer_revenue"))
    customers, orders = by_path.count(), by_path.agg({"orders": "sum"}).first()[0]
    assert re.search(rf"│\s*{customers}\s*│\s*{orders}\s*│", done.stdout), done.stdout


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
    with (
        open(tmp_path / "engine.log", "wb") as log,
        ConnectServer(free_port(), log=log, conf=side_by_side.engine_conf(tmp_path)) as engine,
    ):
        run_two_rounds(spark, root, home, engine.url)
        assert_read_by_name(spark, root, engine.url)
        assert_same_as_spark_pipelines(spark, root, tmp_path, engine.url)


def run_two_rounds(spark, root: Path, home: Path, remote: str) -> None:
    landing = root / "landing" / "sdp_orders"
    eu, us, changes = [], [], []
    seen: set[int] = set()
    for round_no in (1, 2):
        new_eu, new_us, new_changes = answers.land_round(landing, round_no)
        eu, us, changes = eu + new_eu, us + new_us, changes + new_changes
        if round_no == 2:  # killed midway, then run again: still exactly once
            materialize_killed(root, home, remote)
        materialize_all(root, home, remote)
        assert_tables_exact(spark, root, eu, us, changes)
        # The sink got every valid order once; customers_history is clustered (its Delta log says so).
        export = Counter(tuple(r) for r in spark.read.format("delta").load(str(root / "exports" / "orders"))
                         .select("order_id", "customer_id", "amount", "region").collect())  # fmt: skip
        assert export == Counter(answers.silver_orders(eu, us))
        assert clustering_columns(root / "tables" / "customers_history") == [["customer_id"]]
        instance = dg.DagsterInstance.from_config(str(home))
        # Streaming tables read only the new files, once across the killed run and the next.
        assert sum(m.get("rows_read", 0) for m in new_metadata(instance, "bronze_orders_eu", seen)) == len(new_eu)
        assert sum(m.get("rows_read", 0) for m in new_metadata(instance, "bronze_customer_changes", seen)) == len(
            new_changes
        )
        assert len(table(spark, root, "bronze_orders_us")) == len(us)
        # The GROUP BY over one dataset is maintained by key; the join is recomputed whole.
        assert "incremental" in {m.get("refresh") for m in new_metadata(instance, "customer_revenue", seen)}
        assert "full" in {m.get("refresh") for m in new_metadata(instance, "revenue_by_country", seen)}
        seen = materialization_ids(instance)
        # What the declared keys promise held, as asset checks.
        for asset, check in (("customers", "unique_customer_id"), ("customer_revenue", "unique_customer_id"),
                             ("customers_history", "scd2_history_valid")):  # fmt: skip
            key = dg.AssetCheckKey(dg.AssetKey(asset), check)
            (latest,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
            assert latest.status.value == "SUCCEEDED", (asset, check, latest.status)
        if round_no == 1:  # a run with nothing new landed (round 2 leaves the UI test its figures)
            versions = {
                name: len(os.listdir(root / "tables" / name / "_delta_log")) for name in os.listdir(root / "tables")
            }
            materialize_all(root, home, remote)
            after = {
                name: len(os.listdir(root / "tables" / name / "_delta_log")) for name in os.listdir(root / "tables")
            }
            assert after == versions, "a run with nothing new changed a table"
            seen = materialization_ids(dg.DagsterInstance.from_config(str(home)))


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
            wait_until(lambda check=check: check in body_text(browser), 120, f"{asset}'s check {check}")
