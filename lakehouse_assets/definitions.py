"""The demo's Dagster code location: the tables under ``lakehouse_assets/defs/``, with the
framework's jobs, sensors, schedules and resources."""

from __future__ import annotations

import dagster as dg

from lakehouse_assets.lib import LakehousePaths, build_definitions as build_pipeline, collect_tables

TABLES_PACKAGE = "lakehouse_assets.defs"
TABLES = collect_tables(TABLES_PACKAGE)


def build_definitions(paths: LakehousePaths | None = None) -> dg.Definitions:
    """All definitions under one data root (``LAKEHOUSE_ROOT`` by default)."""
    return build_pipeline(TABLES, paths)


defs = build_definitions()
