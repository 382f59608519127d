"""The Dagster UI in headless Chromium: every group and asset is shown, *Materialize all*
started from the UI succeeds on generated data, and screenshots of a lineage and an asset page
are saved to ``docs/img/``.

Chromium and its driver come from Debian (``chromium``, ``chromium-driver``), installed here
with apt-get when missing (the test runs as root); browsers are never downloaded by a Python
package. The test is skipped, saying why, only when Chromium cannot be installed.
"""

from __future__ import annotations

import re
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from lakehouse_assets.definitions import TABLES
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.settings import LakehousePaths
from lakehouse_assets.lib.settings import REPO_ROOT
from lakehouse_assets.tools.devserver import DagsterDev

pytestmark = pytest.mark.slow

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1600,3000",  # tall: the graph renders only the nodes in view
]
SCREENSHOTS = REPO_ROOT / "docs" / "img"
MATERIALIZE = "bronze_events"


def ensure_chromium() -> tuple[str, str]:
    """Paths of chromium and chromedriver, installing Debian's packages if they are missing."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("chromium/chromium-driver are missing and cannot be installed (needs root and apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    steps = [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"]]
    for step in steps:
        result = subprocess.run(step, env=env, capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            pytest.skip(f"could not install chromium with {' '.join(step)}: {result.stderr.strip()[-500:]}")
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.skip("apt-get installed chromium, but chromium or chromedriver is still not on PATH")
    return chromium, driver


@pytest.fixture
def browser(tmp_path: Path):
    chromium, driver_path = ensure_chromium()
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the test extra: pip install -e '.[test]'")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(predicate, timeout: float, what: str, step: float = 1.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as error:  # noqa: BLE001 - the page is still rendering
            last = error
        time.sleep(step)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def shown_names(driver) -> set[str]:
    """Names shown on the page: text, plus the full names of labels shortened with an ellipsis
    (the graph keeps those in a ``data-tooltip`` attribute)."""
    tooltips = driver.execute_script("return [...document.querySelectorAll('[data-tooltip]')].map(e => e.dataset.tooltip)")
    return set(tooltips) | set(body_text(driver).split())


def body_text(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def test_ui_shows_the_graph_and_materializes(tmp_path: Path, browser) -> None:
    from selenium.webdriver.common.by import By

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

        def click_materialize_all() -> bool:  # looked up afresh: the page re-renders as data arrives
            browser.find_element(By.XPATH, "//button[normalize-space()='Materialize all']").click()
            return True

        wait_until(click_materialize_all, 120, "the Materialize all button")
        toast = wait_until(lambda: "Launched run" in body_text(browser) and body_text(browser), 60, "the launch toast")
        run_id_prefix = toast.split("Launched run", 1)[1].split()[0]
        run = wait_until(lambda: next((r for r in dev.runs() if r["runId"].startswith(run_id_prefix)), None), 60, "run")
        browser.get(f"{dev.url}/runs/{run['runId']}")
        status = wait_until(
            lambda: next(r["status"] for r in dev.runs() if r["runId"] == run["runId"]) in ("SUCCESS", "FAILURE", "CANCELED")
            and next(r["status"] for r in dev.runs() if r["runId"] == run["runId"]),
            900,
            "the run to finish",
            5,
        )
        assert status == "SUCCESS", dev.runs()
        # ... and the run's page in the UI says so
        browser.refresh()
        wait_until(lambda: "Success" in body_text(browser), 120, "the run page's Success")

        # the screenshots, on a 1600x1000 screen: a gold table's upstream lineage (full names,
        # statuses, checks) and an asset's page (figures, column descriptions)
        browser.set_window_size(1600, 1000)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.get(f"{dev.url}/assets/gold_hourly_revenue?view=lineage&lineageScope=upstream&lineageDepth=4")
        chain = {"bronze_events", "silver_events", "silver_customers", "gold_hourly_revenue"}
        wait_until(lambda: chain <= shown_names(browser) and body_text(browser).count("Materialized") >= 5, 120, "the lineage")
        time.sleep(3)
        assert browser.save_screenshot(str(SCREENSHOTS / "lineage.png"))
        browser.get(f"{dev.url}/assets/silver_events")
        described = "the user's current tier in silver_customers"
        wait_until(lambda: "Row count" in body_text(browser) and described in body_text(browser), 120, "the asset page")
        time.sleep(2)
        assert browser.save_screenshot(str(SCREENSHOTS / "asset-page.png"))
