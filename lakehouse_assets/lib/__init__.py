"""lakehouse_assets' framework: declarative streaming Delta tables as Dagster assets.

Declare tables with :func:`streaming_table` in a package, collect them with
:func:`collect_tables`, and build a code location with :func:`build_definitions`; or load a
Spark Declarative Pipelines project unchanged with :func:`load_spark_pipeline`.
"""

import importlib

from lakehouse_assets.lib.declare.cdc import auto_cdc, scd1_current, scd2_history, snapshot_cdc
from lakehouse_assets.lib.declare.checks import (
    CheckOutcome,
    TableCheck,
    caught_up_with_landing,
    custom_check,
    landed_lines_conserved,
    not_null,
    quarantine_rate,
    quarantine_traceable,
    reconciles_with,
    rows_satisfy,
    scd2_valid,
    schema_unchanged,
    unique,
)
from lakehouse_assets.lib.declare.expectations import (
    Expectation,
    expect,
    expect_or_drop,
    expect_or_fail,
    expect_or_quarantine,
)
from lakehouse_assets.lib.declare.flows import AppendFlow, append_flow
from lakehouse_assets.lib.declare.inputs import catalog_table, change_feed, landing, static, stream
from lakehouse_assets.lib.declare.kafka_inputs import kafka
from lakehouse_assets.lib.declare.parsing import IS_JSON_OBJECT, RESCUED, non_blank_lines, parse_json_lines
from lakehouse_assets.lib.declare.quarantine import Quarantine
from lakehouse_assets.lib.declare.registry import collect_tables
from lakehouse_assets.lib.declare.sinks import append, merge, overwrite, recompute, to_delta, to_kafka
from lakehouse_assets.lib.declare.table import TableSpec, streaming_table
from lakehouse_assets.lib.errors import (
    DeclarationError,
    EngineUnavailable,
    ExpectationFailed,
    KafkaProblem,
    LakehouseError,
    RootUnusable,
)
from lakehouse_assets.lib.paths import LakehousePaths

# The Dagster adapter loads on first use: a Spark Connect engine's Python workers import the
# declarations and the engine to run micro-batches, and need no Dagster (about 0.5 s each).
_ORCHESTRATE = {
    "build_table_assets": "lakehouse_assets.lib.orchestrate.assets",
    "build_definitions": "lakehouse_assets.lib.orchestrate.code_location",
    "LakehouseResource": "lakehouse_assets.lib.orchestrate.resources",
    "StreamingTableConfig": "lakehouse_assets.lib.orchestrate.resources",
    "load_spark_pipeline": "lakehouse_assets.lib.sdp.location",
}


def __getattr__(name: str) -> object:
    if name in _ORCHESTRATE:
        return getattr(importlib.import_module(_ORCHESTRATE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_ORCHESTRATE])


__all__ = [
    "IS_JSON_OBJECT",
    "RESCUED",
    "AppendFlow",
    "CheckOutcome",
    "DeclarationError",
    "EngineUnavailable",
    "Expectation",
    "ExpectationFailed",
    "KafkaProblem",
    "LakehouseError",
    "LakehousePaths",
    "LakehouseResource",
    "Quarantine",
    "RootUnusable",
    "StreamingTableConfig",
    "TableCheck",
    "TableSpec",
    "append",
    "append_flow",
    "auto_cdc",
    "build_definitions",
    "build_table_assets",
    "catalog_table",
    "caught_up_with_landing",
    "change_feed",
    "collect_tables",
    "custom_check",
    "expect",
    "expect_or_drop",
    "expect_or_fail",
    "expect_or_quarantine",
    "kafka",
    "landed_lines_conserved",
    "landing",
    "load_spark_pipeline",
    "merge",
    "non_blank_lines",
    "not_null",
    "overwrite",
    "parse_json_lines",
    "quarantine_rate",
    "quarantine_traceable",
    "recompute",
    "reconciles_with",
    "rows_satisfy",
    "scd1_current",
    "scd2_history",
    "scd2_valid",
    "schema_unchanged",
    "snapshot_cdc",
    "static",
    "stream",
    "streaming_table",
    "to_delta",
    "to_kafka",
    "unique",
]
