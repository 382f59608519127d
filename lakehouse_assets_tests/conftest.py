"""Shared fixtures: one SparkSession per test process, a fresh data root per scenario."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# devstack and this package are not installed: processes the tests start (the dagster CLI,
# scripts, fault hooks) import them from the checkout's root too.
REPO_ROOT = str(Path(__file__).resolve().parents[1])
if REPO_ROOT not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")]))

pytest.register_assert_rewrite("lakehouse_assets_tests.support")
# Imported after the PYTHONPATH above and the assert rewriting (which only applies to modules
# imported after it is registered): E402 on purpose.
from pyspark.sql import SparkSession  # noqa: E402

from devstack.postgres import PostgresServer  # noqa: E402
from lakehouse_assets.lib.spark.session import get_spark  # noqa: E402
from lakehouse_assets_tests.support.browser import chromium_driver  # noqa: E402
from verification.lakehouse import Lakehouse, make_lakehouse  # noqa: E402


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[SparkSession]:
    session = get_spark()
    yield session


@pytest.fixture(autouse=True)
def _unit_tests_start_no_spark(request: pytest.FixtureRequest) -> None:
    """A test marked ``unit`` must not need a SparkSession (the marker's promise)."""
    if request.node.get_closest_marker("unit") and "spark" in request.fixturenames:
        pytest.fail("a unit test asked for a SparkSession: drop the unit marker or the session")


@pytest.fixture
def lakehouse(tmp_path: Path, spark: SparkSession) -> Lakehouse:
    return make_lakehouse(tmp_path, spark)


@pytest.fixture(scope="module")
def module_lakehouse(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Lakehouse:
    return make_lakehouse(tmp_path_factory.mktemp("lakehouse"), spark)


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("SPARK_LOG_LEVEL", "ERROR")


# No test may take the suite's time with it: past this, the test fails where it waits (its
# stacks were dumped by faulthandler_timeout, pyproject.toml, five minutes earlier).
TEST_TIME_LIMIT_S = int(os.environ.get("LAKEHOUSE_TEST_TIME_LIMIT_S", "1200"))


class TestTimeLimit(Exception):
    pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise TestTimeLimit(f"{item.nodeid} passed its limit of {TEST_TIME_LIMIT_S}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TEST_TIME_LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def browser(tmp_path: Path):
    """Headless Chromium (installed from Debian's packages when missing, else the test skips)."""
    with chromium_driver(tmp_path / "chromium-profile") as driver:
        yield driver


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server (Debian's package) for the session; each test makes its database.
    Skipped, saying why, when PostgreSQL is missing and cannot be installed."""
    server = PostgresServer()
    try:
        server.start()
    except RuntimeError as error:
        pytest.skip(f"no PostgreSQL server: {error}")
    try:
        yield server
    finally:
        server.stop()


# The longest groups in CI's --durations (minutes): scheduled first, alternating between the two
# workers, so neither is left with a long group at the end while the other idles.
LONGEST_GROUPS = (
    "scaleout",  # 12
    "lakehouse_assets_tests/orchestration/test_browser_ui.py",  # 5.5
    "lakehouse_assets_tests/pipeline/test_crash_recovery.py",  # 5
    "lakehouse_assets_tests/orchestration/test_e2e.py",  # 4
    "lakehouse_assets_tests/orchestration/test_burst.py",  # 3
)


def worker_group(nodeid: str) -> str:
    """What runs in one worker under ``make test`` (pytest-xdist): a module, so its module-scoped
    fixtures start once; the scale-out package as a whole (one cluster, engine and bucket)."""
    module = nodeid.split("::", 1)[0]
    return "scaleout" if module.startswith("lakehouse_assets_tests/scaleout/") else module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist's scope scheduler with our groups as scopes, in collection order."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    config.option.loadscopereorder = False  # keep the order below: longest groups first
    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest groups first, then every module with slow tests, then the rest."""
    slow_groups = {worker_group(item.nodeid) for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> tuple[int, int]:
        group = worker_group(item.nodeid)
        if group in LONGEST_GROUPS:
            return 0, LONGEST_GROUPS.index(group)
        return (1 if group in slow_groups else 2), 0

    items.sort(key=rank)  # stable: tests keep their order inside a module
