"""lakehouse_assets: declarative streaming Delta tables as Dagster assets.

The framework is :mod:`lakehouse_assets.lib`; the demo pipeline's tables are under
:mod:`lakehouse_assets.defs` and its Dagster code location is :mod:`lakehouse_assets.definitions`.
Importing this package runs nothing.
"""
