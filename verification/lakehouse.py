"""A data root with the demo's definitions, materialized in-process on the shared session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from pyspark.sql import DataFrame, SparkSession

from lakehouse_assets.definitions import build_definitions
from lakehouse_assets.lib.paths import LakehousePaths


@dataclass
class Lakehouse:
    """A data root with its Definitions, materialized in-process on the shared session."""

    root: Path
    spark: SparkSession
    instance: dg.DagsterInstance

    @property
    def paths(self) -> LakehousePaths:
        return LakehousePaths(str(self.root))

    @property
    def defs(self) -> dg.Definitions:
        return build_definitions(self.paths)

    def materialize(
        self, selection: str = "*", run_config: dict | None = None, raise_on_error: bool = True
    ) -> dg.ExecuteInProcessResult:
        defs = self.defs
        return dg.materialize(
            assets=list(defs.assets or []),
            resources=defs.resources,
            instance=self.instance,
            selection=selection,
            run_config=run_config,
            raise_on_error=raise_on_error,
        )

    def table(self, name: str) -> DataFrame:
        return self.spark.read.format("delta").load(self.paths.table(name))

    def landing(self, source: str) -> Path:
        folder = self.root / "landing" / source
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def make_lakehouse(tmp_path: Path, spark: SparkSession) -> Lakehouse:
    return Lakehouse(tmp_path / "lakehouse", spark, dg.DagsterInstance.ephemeral())
