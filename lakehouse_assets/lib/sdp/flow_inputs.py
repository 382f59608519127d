"""What a flow reads once temporary views are followed, and what a streaming table's flows must read."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.pipelines.flow import Flow

from lakehouse_assets.lib.declare.inputs import Input, static, stream
from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.api import ONCE_ATTRIBUTE
from lakehouse_assets.lib.sdp.graph import where
from lakehouse_assets.lib.sdp.plan_reading import FileRead


@dataclass
class FlowInputs:
    """What a flow reads once temporary views are followed: datasets (streamed or not), files,
    and the views to compute first."""

    tables: dict[str, bool] = field(default_factory=dict)
    files: list[FileRead] = field(default_factory=list)
    views: list[str] = field(default_factory=list)

    @property
    def streams(self) -> bool:
        return any(self.tables.values()) or any(f.streaming for f in self.files)

    def declared(self) -> dict[str, Input]:
        return {name: stream(name) if streaming else static(name) for name, streaming in self.tables.items()}


def is_once(flow: Flow) -> bool:
    return bool(getattr(flow.func, ONCE_ATTRIBUTE, False))


def check_streams(table: str, flows: list[Flow], found: list[FlowInputs]) -> None:
    """A streaming table's flows read a stream, its once-flows snapshots; one flow streams."""
    for flow, inputs in zip(flows, found, strict=True):
        place = where(flow.source_code_location)
        if is_once(flow) and inputs.streams:
            raise DeclarationError(
                f"{place}: once-flow {flow.name} into {table} reads a stream; a backfill reads spark.read"
            )
        if not is_once(flow) and not inputs.streams:
            raise DeclarationError(
                f"{place}: flow {flow.name} into {table} reads no stream; a streaming "
                "table's flows read spark.readStream (use @dp.materialized_view for a snapshot query)"
            )
    if all(is_once(f) for f in flows):
        raise DeclarationError(
            f"{where(flows[0].source_code_location)}: {table} has only once-flows; give it a streaming flow"
        )
