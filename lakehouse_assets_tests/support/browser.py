"""Headless Chromium for the UI tests: Debian's chromium and chromium-driver, installed with
apt-get when missing (the tests run as root); browsers are never downloaded by a Python package.
Without them the tests are skipped, saying why."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from devstack import REPO_ROOT
from devstack.apt import apt_install

SCREENSHOTS = REPO_ROOT / "docs" / "img"

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


def ensure_chromium() -> tuple[str, str]:
    """Paths of chromium and chromedriver, installing Debian's packages if they are missing."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    try:
        apt_install(["chromium", "chromium-driver"], "chromium")
    except RuntimeError as error:
        pytest.skip(str(error))
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.skip("apt-get installed chromium, but chromium or chromedriver is still not on PATH")
    return chromium, driver


@contextmanager
def chromium_driver(profile: Path) -> Iterator:
    chromium, driver_path = ensure_chromium()
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is in the test extra: pip install -e '.[test]'"
    )
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
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
    tooltips = driver.execute_script(
        "return [...document.querySelectorAll('[data-tooltip]')].map(e => e.dataset.tooltip)"
    )
    return set(tooltips) | set(body_text(driver).split())


def body_text(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text
