"""lakehouse_assets: declarative streaming Delta tables as Dagster assets."""

from lakehouse_assets.definitions import defs

__all__ = ["defs"]
