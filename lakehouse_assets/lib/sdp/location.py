"""Dagster definitions from a Spark Declarative Pipelines project."""

from __future__ import annotations

import threading
from pathlib import Path

import dagster as dg

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.orchestrate.code_location import build_definitions
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.sdp.convert import pipeline_tables
from lakehouse_assets.lib.sdp.loading import files_state, read_spec

LOADED_KEPT = 8
_LOADING = threading.Lock()
# The spec, each of its files' (path, inode, mtime, size), the configuration as expanded.
Fingerprint = tuple[Path, tuple[tuple[str, int, int, int], ...], tuple[tuple[str, str], ...]]
_LOADED: dict[Fingerprint, list[TableSpec]] = {}


def _fingerprint(spec_path: Path) -> Fingerprint:
    """What the pipeline's tables follow from: its spec and library files as they are on disk,
    and its configuration with the environment's variables expanded."""
    spec_path = spec_path.resolve()
    spec, configuration = read_spec(spec_path)
    return spec_path, files_state(spec_path, spec), tuple(sorted(configuration.items()))


def _tables(spec_path: Path) -> list[TableSpec]:
    """The pipeline's tables, loaded once per process while its files are unchanged: Dagster
    loads a code location several times per ``dagster asset materialize`` (~0.1 s a load of
    the example's files)."""
    key = _fingerprint(spec_path)
    with _LOADING:
        if key not in _LOADED:
            while len(_LOADED) >= LOADED_KEPT:
                del _LOADED[next(iter(_LOADED))]
            _LOADED[key] = pipeline_tables(spec_path)
        return _LOADED[key]


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
    return build_definitions(_tables(Path(spec_path)), paths, sensors=sensors, schedules=schedules)
