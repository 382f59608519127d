"""The first project an SDP user makes, ``spark-pipelines init`` (generated here with the
installed pyspark), loads and materializes unchanged: its Python and its SQL materialized view."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from pyspark.pipelines.init_cli import init

from lakehouse_assets.lib import LakehousePaths, load_spark_pipeline
from lakehouse_assets.lib.declare.sinks import OverwriteSink
from lakehouse_assets.lib.sdp.convert import pipeline_tables


def sample_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    init("sample")
    return tmp_path / "sample" / "spark-pipeline.yml"


@pytest.mark.unit
def test_the_init_project_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(tmp_path / "root"))
    tables = {t.name: t for t in pipeline_tables(sample_project(tmp_path, monkeypatch))}
    assert set(tables) == {"example_python_materialized_view", "example_sql_materialized_view"}
    sql_view = tables["example_sql_materialized_view"]
    assert isinstance(sql_view.sink, OverwriteSink) and sql_view.lookup_tables == ["example_python_materialized_view"]


@pytest.mark.slow
def test_the_init_project_materializes(tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))
    defs = load_spark_pipeline(sample_project(tmp_path, monkeypatch), paths=LakehousePaths(str(root)))
    result = dg.materialize(list(defs.assets or []), resources=defs.resources, instance=dg.DagsterInstance.ephemeral(),
                            selection="*")  # fmt: skip
    assert result.success
    ids = {name: sorted(r.id for r in spark.read.format("delta").load(str(root / "tables" / name)).collect())
           for name in ("example_python_materialized_view", "example_sql_materialized_view")}  # fmt: skip
    assert ids == {"example_python_materialized_view": list(range(10)),
                   "example_sql_materialized_view": [i for i in range(10) if i % 2 == 0]}  # fmt: skip
