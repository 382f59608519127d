"""Dagster resources and run configuration shared by the assets and ops."""

from __future__ import annotations

import dagster as dg

from lakehouse_assets.lib.paths import LakehousePaths


class LakehouseResource(dg.ConfigurableResource):
    """The data root (a path or URI) under which landing files, tables and checkpoints live."""

    root: str

    @property
    def paths(self) -> LakehousePaths:
        return LakehousePaths(self.root)


class StreamingTableConfig(dg.Config):
    """Run configuration of a streaming table."""

    full_refresh: bool = False
    """Reset the table's checkpoint, empty it, and rebuild it from all of its inputs."""
