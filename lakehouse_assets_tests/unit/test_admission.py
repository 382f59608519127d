"""The run queue's limit fits the engine: the instance built from the repository's dagster.yaml
admits two runs per engine core when runs are Spark Connect clients, one per core when each run
embeds its own Spark, and a number in dagster.yaml wins. Spark-free."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from devstack.dagster_dev import isolated_home
from lakehouse_assets.lib.accel.admission import EngineRunCoordinator

pytestmark = pytest.mark.unit


def _run_limit(home: Path) -> int:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.run_coordinator, EngineRunCoordinator)
        queue = instance.get_concurrency_config().run_queue_config
        assert queue is not None
        return queue.max_concurrent_runs


@pytest.mark.parametrize(
    ("spark_remote", "cores", "expected"),
    [("sc://127.0.0.1:15002", "3", 6), ("", "3", 3), ("sc://127.0.0.1:15002", "1", 2)],
)
def test_the_limit_follows_the_engine_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark_remote: str, cores: str, expected: int
) -> None:
    monkeypatch.setenv("SPARK_REMOTE", spark_remote)
    monkeypatch.setenv("LAKEHOUSE_ENGINE_CORES", cores)
    assert _run_limit(isolated_home(tmp_path / "home")) == expected


def test_a_number_in_dagster_yaml_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:15002")
    monkeypatch.setenv("LAKEHOUSE_ENGINE_CORES", "8")
    home = isolated_home(tmp_path / "home")
    config = (home / "dagster.yaml").read_text()
    assert config.count("  runs:\n") == 1
    (home / "dagster.yaml").write_text(config.replace("  runs:\n", "  runs:\n    max_concurrent_runs: 5\n"))
    assert _run_limit(home) == 5


def test_another_settings_bad_value_does_not_stop_the_instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_REMOTE", "")
    monkeypatch.setenv("LAKEHOUSE_ENGINE_CORES", "2")
    monkeypatch.setenv("LAKEHOUSE_SENSOR_INTERVAL_SECONDS", "often")
    assert _run_limit(isolated_home(tmp_path / "home")) == 2
