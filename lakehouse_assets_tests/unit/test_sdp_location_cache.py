"""A Spark Declarative Pipelines project is loaded once per process while its files and its
configuration are unchanged (Dagster loads a code location several times per run), and again as
soon as one of them changes. Spark-free: loading plans with a session that nothing answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lakehouse_assets.lib import LakehousePaths, load_spark_pipeline

pytestmark = pytest.mark.unit

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sdp_orders"


def asset_names(defs) -> set[str]:
    return {key.to_user_string() for a in defs.assets or [] for key in a.keys}


def test_a_pipeline_is_loaded_again_only_when_a_file_or_the_configuration_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "sdp_orders"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    spec, paths = project / "spark-pipeline.yml", LakehousePaths(str(tmp_path / "root"))
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(tmp_path / "root"))
    first = load_spark_pipeline(spec, paths=paths)
    assert load_spark_pipeline(spec, paths=paths) is first

    monkeypatch.setenv("LAKEHOUSE_ROOT", str(tmp_path / "elsewhere"))  # the spec's ${LAKEHOUSE_ROOT}
    moved = load_spark_pipeline(spec, paths=paths)
    assert moved is not first and asset_names(moved) == asset_names(first)

    exported = asset_names(moved)
    (project / "transformations" / "export.py").unlink()
    fewer = load_spark_pipeline(spec, paths=paths)
    assert asset_names(fewer) < exported, "a library file removed: loaded again"
