"""The demo's Dagster code location: the tables under ``lakehouse_assets/defs/``, with the
framework's jobs, sensors, schedules and resources, built when Dagster loads it
(``dagster asset materialize -m lakehouse_assets.definitions``, ``dg launch``, ``dagster dev``)."""

from __future__ import annotations

import dagster as dg

from lakehouse_assets.lib import LakehousePaths, collect_tables
from lakehouse_assets.lib import build_definitions as build_pipeline
from lakehouse_assets.lib.errors import RootUnusable

TABLES_PACKAGE = "lakehouse_assets.defs"
TABLES = collect_tables(TABLES_PACKAGE)


def build_definitions(paths: LakehousePaths | None = None) -> dg.Definitions:
    """All definitions under one data root (``LAKEHOUSE_ROOT`` by default)."""
    return build_pipeline(TABLES, paths)


@dg.definitions
def defs() -> dg.Definitions:
    """The code location, under the data root that ``LAKEHOUSE_ROOT`` names when Dagster loads it."""
    try:
        return build_definitions()
    except RootUnusable as error:
        # Before Dagster runs anything: one sentence on the terminal, no traceback.
        raise SystemExit(f"lakehouse_assets: {error}") from None
