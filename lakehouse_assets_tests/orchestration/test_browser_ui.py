"""The Dagster UI in headless Chromium (``support/browser.py``): every group and asset is shown,
*Materialize all* started from the UI succeeds on generated data, screenshots of a lineage
and an asset page are saved to ``docs/img/``, and after a second run with nothing new the UI
tells the truth: checks with nothing to check, a sink that sent nothing, quarantine tables
marked and linked, gold's freshness check."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from devstack.dagster_dev import DagsterDev
from lakehouse_assets.definitions import TABLES
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets_tests.support.browser import SCREENSHOTS, body_text, shown_names, wait_until

pytestmark = pytest.mark.slow

MATERIALIZE = "bronze_events"


def test_ui_shows_the_graph_and_materializes(tmp_path: Path, browser) -> None:
    groups = sorted({t.group for t in TABLES})
    assets_by_group: dict[str, set[str]] = {}
    for table in TABLES:
        assets_by_group.setdefault(table.group, set()).update(table.outputs)

    root = tmp_path / "lakehouse"
    generate(LakehousePaths(str(root)), GeneratorOptions(files=1, rows=200, seed=5))
    with DagsterDev(root=root, isolated=True, env={"SPARK_LOCAL_IP": "127.0.0.1"}) as dev:
        browser.get(f"{dev.url}/asset-groups")
        # the first visit's "join the community" dialog would cover the page
        browser.execute_script("localStorage.setItem('communityNux', '1')")

        # the global asset graph shows the three groups (collapsed: many assets)
        browser.get(f"{dev.url}/asset-groups")
        wait_until(lambda: set(groups) <= shown_names(browser), 120, "the groups in the global graph")
        assert "Global asset lineage" in body_text(browser)

        # each group's graph shows every one of its assets
        for group, names in assets_by_group.items():
            browser.get(f"{dev.url}/locations/lakehouse_assets/asset-groups/{group}")
            try:
                wait_until(lambda names=names: not names - shown_names(browser), 120, f"the {group} graph")
            except TimeoutError:
                browser.save_screenshot(str(tmp_path / f"group-{group}.png"))
                raise AssertionError(
                    f"group {group}: assets missing from the graph: {sorted(names - shown_names(browser))}"
                ) from None

        # the asset's page: kinds, owners, code reference, the sensor that materializes it
        browser.get(f"{dev.url}/assets/{MATERIALIZE}")
        details = ("delta", "Spark", "data-platform", "Source code")
        # Two sensors target it (landing files and Kafka): the page names them or counts them.
        sensors = re.compile(r"landing_events_sensor|\b2 sensors\b", re.IGNORECASE)
        wait_until(
            lambda: all(d in body_text(browser) for d in details) and sensors.search(body_text(browser)),
            120, f"the details {details} and its sensors",
        )  # fmt: skip

        # materialize everything from the global lineage's button and watch the run succeed
        browser.get(f"{dev.url}/asset-groups")
        materialize_all_from_the_ui(browser, dev)

        # the screenshots, on a 1600x1000 screen: a gold table's upstream lineage (full names,
        # statuses, checks) and an asset's page (figures, column descriptions)
        browser.set_window_size(1600, 1000)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.get(f"{dev.url}/assets/gold_hourly_revenue?view=lineage&lineageScope=upstream&lineageDepth=4")
        chain = {"bronze_events", "silver_events", "silver_customers", "gold_hourly_revenue"}
        wait_until(
            lambda: chain <= shown_names(browser) and body_text(browser).count("Materialized") >= 5, 120, "the lineage"
        )
        time.sleep(3)
        assert browser.save_screenshot(str(SCREENSHOTS / "lineage.png"))
        browser.get(f"{dev.url}/assets/silver_events")
        described = "the user's current tier in silver_customers"
        wait_until(lambda: "Row count" in body_text(browser) and described in body_text(browser), 120, "the asset page")
        time.sleep(2)
        assert browser.save_screenshot(str(SCREENSHOTS / "asset-page.png"))

        # What an operator sees after a run with nothing new, from the UI again: a check of the
        # changed rows says there was nothing to check (no 0-row "Passed"), the Kafka sink with
        # no broker says it sent nothing, a quarantine table is marked as one and hangs off its
        # table, and gold says whether it holds what landed.
        browser.set_window_size(1280, 900)
        browser.get(f"{dev.url}/asset-groups")
        materialize_all_from_the_ui(browser, dev)
        browser.get(f"{dev.url}/assets/bronze_events?view=checks")
        wait_until(lambda: "Nothing new to check" in body_text(browser), 120, "a check with nothing new")
        browser.get(f"{dev.url}/assets/silver_events")
        wait_until(lambda: "last_change/rows_written" in body_text(browser), 120, "the last change's figures")
        browser.get(f"{dev.url}/assets/gold_hourly_revenue_changes")
        wait_until(lambda: "no broker is configured" in body_text(browser), 120, "the sink's warning")
        browser.get(f"{dev.url}/assets/bronze_events_quarantine")
        marked = re.compile(r"\bquarantine_of\s+.*?\bbronze_events\b.*\bKinds\s+(?:\w+\s+)*?quarantine\b", re.S)
        wait_until(lambda: marked.search(body_text(browser)), 120, "the quarantine's kind and quarantine_of")
        browser.get(f"{dev.url}/assets/bronze_events_quarantine?view=lineage&lineageScope=upstream&lineageDepth=1")
        wait_until(lambda: "bronze_events" in shown_names(browser), 120, "the quarantine's edge to its table")
        browser.get(f"{dev.url}/assets/gold_hourly_revenue?view=checks")
        wait_until(lambda: "behind_s" in body_text(browser), 120, "gold's freshness check and its figures")
        time.sleep(2)
        assert browser.save_screenshot(str(SCREENSHOTS / "freshness.png"))


def materialize_all_from_the_ui(browser, dev: DagsterDev) -> None:
    """Click *Materialize all* on the page shown, and wait for the run to succeed, there and in
    the run's page."""
    from selenium.webdriver.common.by import By

    def click_materialize_all() -> bool:  # looked up afresh: the page re-renders as data arrives
        browser.find_element(By.XPATH, "//button[normalize-space()='Materialize all']").click()
        return True

    wait_until(click_materialize_all, 120, "the Materialize all button")
    toast = wait_until(lambda: "Launched run" in body_text(browser) and body_text(browser), 60, "the launch toast")
    run_id_prefix = toast.split("Launched run", 1)[1].split()[0]
    run = wait_until(lambda: next((r for r in dev.runs() if r["runId"].startswith(run_id_prefix)), None), 60, "run")
    browser.get(f"{dev.url}/runs/{run['runId']}")

    def ended() -> str | None:
        status = next(r["status"] for r in dev.runs() if r["runId"] == run["runId"])
        return status if status in ("SUCCESS", "FAILURE", "CANCELED") else None

    assert wait_until(ended, 900, "the run to finish", 5) == "SUCCESS", dev.runs()
    browser.refresh()  # ... and the run's page in the UI says so
    wait_until(lambda: "Success" in body_text(browser), 120, "the run page's Success")
