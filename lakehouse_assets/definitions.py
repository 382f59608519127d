"""The Dagster code location: the demo pipeline's assets, resources and orchestration."""

from __future__ import annotations

import dagster as dg

from lakehouse_assets.defs import TABLES
from lakehouse_assets.lib import LakehousePaths, LakehouseResource, build_table_assets
from lakehouse_assets.lib.spark import spark_resource
from lakehouse_assets.orchestration import JOBS, SCHEDULES, SENSORS


def build_definitions(paths: LakehousePaths | None = None) -> dg.Definitions:
    """All definitions under one data root (``LAKEHOUSE_ROOT`` by default)."""
    paths = paths or LakehousePaths.from_env()
    return dg.Definitions(
        assets=build_table_assets(TABLES, paths),
        jobs=JOBS,
        sensors=SENSORS,
        schedules=SCHEDULES,
        resources={
            "spark": spark_resource(),
            "lakehouse": LakehouseResource(root=paths.root),
        },
        # One process per run, so every step shares one SparkSession (one JVM per run).
        executor=dg.in_process_executor,
    )


defs = build_definitions()
