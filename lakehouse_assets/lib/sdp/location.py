"""Dagster definitions from a Spark Declarative Pipelines project."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from lakehouse_assets.lib.orchestrate.code_location import build_definitions
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.sdp.convert import pipeline_tables


def load_spark_pipeline(
    spec_path: str | Path,
    *,
    paths: LakehousePaths | None = None,
    sensors: bool = True,
    schedules: bool = True,
) -> dg.Definitions:
    """One asset per dataset of the pipeline ``spec_path`` describes (``spark-pipeline.yml``):
    its files run unchanged, each dataset a Delta table under the data root, run by this
    project's engine (checkpoints, exactly once, expectations as counts and checks).

    :param spec_path: the pipeline's spec.
    :param paths: the data root (default: ``LAKEHOUSE_ROOT``).
    :param sensors: as :func:`~lakehouse_assets.lib.build_definitions`.
    :param schedules: as :func:`~lakehouse_assets.lib.build_definitions`.
    :raises LakehouseError: the pipeline cannot run here; the message names the file and line.
    """
    return build_definitions(pipeline_tables(Path(spec_path)), paths, sensors=sensors, schedules=schedules)
