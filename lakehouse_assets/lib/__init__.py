"""The reusable lakehouse framework: declarative streaming Delta tables as Dagster assets."""

from lakehouse_assets.lib.assets import LakehouseResource, StreamingTableConfig, build_table_assets
from lakehouse_assets.lib.expectations import (
    Expectation,
    expect,
    expect_or_drop,
    expect_or_fail,
    expect_or_quarantine,
)
from lakehouse_assets.lib.settings import LakehousePaths
from lakehouse_assets.lib.sinks import append, merge, recompute
from lakehouse_assets.lib.table import (
    Quarantine,
    StreamingTable,
    change_feed,
    landing,
    static,
    stream,
    streaming_table,
)

__all__ = [
    "Expectation",
    "LakehousePaths",
    "LakehouseResource",
    "Quarantine",
    "StreamingTable",
    "StreamingTableConfig",
    "append",
    "build_table_assets",
    "change_feed",
    "expect",
    "expect_or_drop",
    "expect_or_fail",
    "expect_or_quarantine",
    "landing",
    "merge",
    "recompute",
    "static",
    "stream",
    "streaming_table",
]
