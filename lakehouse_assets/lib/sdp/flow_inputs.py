"""What a flow reads once temporary views are followed, what a streaming table's flows must read,
and a sink's settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.pipelines.flow import Flow
from pyspark.pipelines.output import Sink

from lakehouse_assets.lib.declare.file_streams import FileStream
from lakehouse_assets.lib.declare.flows import AppendFlow, append_flow
from lakehouse_assets.lib.declare.inputs import Input, LandingInput, catalog_table, static, stream
from lakehouse_assets.lib.declare.sinks import DeltaPathSink, KafkaSink
from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.api import ONCE_ATTRIBUTE, expectations_of
from lakehouse_assets.lib.sdp.auto_loader import auto_loader_input, input_key, is_auto_loader
from lakehouse_assets.lib.sdp.graph import where
from lakehouse_assets.lib.sdp.plan_reading import FileRead, file_streams_of


@dataclass
class FlowInputs:
    """What a flow reads once temporary views are followed: datasets (streamed or not), files,
    and the views to compute first."""

    tables: dict[str, bool] = field(default_factory=dict)
    files: list[FileRead] = field(default_factory=list)
    views: list[str] = field(default_factory=list)
    # Auto Loader reads, by input key: read by the engine, not by the flow's own code.
    auto_loader: dict[str, LandingInput] = field(default_factory=dict)
    # Tables of Spark's catalog that are not datasets of the pipeline, read as snapshots.
    catalog: list[str] = field(default_factory=list)

    @property
    def streams(self) -> bool:
        return any(self.tables.values()) or any(f.streaming for f in self.files) or bool(self.auto_loader)

    def declared(self) -> dict[str, Input]:
        inputs: dict[str, Input] = {n: stream(n) if s else static(n) for n, s in self.tables.items()}
        return {**inputs, **{n: catalog_table(n) for n in self.catalog}, **self.auto_loader}

    def file_streams(self) -> tuple[FileStream, ...]:
        """The folders the flow's own code streams (Auto Loader reads are the engine's inputs)."""
        return file_streams_of(self.files)

    @classmethod
    def of_files(cls, files: list[FileRead], place: str) -> FlowInputs:
        """The file reads of a plan: Auto Loader ones as the engine's inputs, others as they are."""
        loaded: dict[str, LandingInput] = {}
        for read in filter(is_auto_loader, files):
            found = auto_loader_input(read, place)  # refuses a read of no folder or of several
            loaded[input_key(read.paths[0])] = found
        return cls(files=[f for f in files if not is_auto_loader(f)], auto_loader=loaded)


def is_once(flow: Flow) -> bool:
    return bool(getattr(flow.func, ONCE_ATTRIBUTE, False))


def further_flow(flow: Flow, inputs: FlowInputs, transform: Callable[..., Any]) -> AppendFlow:
    """A streaming table's further flow: what it reads, its transform, the folders its code streams."""
    declared = append_flow(
        flow.name, inputs=inputs.declared(), transform=transform, once=is_once(flow), spark_conf=flow.spark_conf
    )
    return replace(declared, file_streams=inputs.file_streams())


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


def declared_sink(sink: Sink, flows: list[Flow]) -> DeltaPathSink | KafkaSink:
    """``dp.create_sink(name, "delta", {"path": ...})`` or ``dp.create_sink(name, "kafka",
    {"kafka.bootstrap.servers": ..., "topic": ...})`` as the sink its flows append to. A Kafka
    sink sends each row as a Kafka record (the flow returns ``value``, and may return ``key``);
    its brokers default to ``LAKEHOUSE_KAFKA_BOOTSTRAP``."""
    place = where(sink.source_code_location)
    options = dict(sink.options or {})
    if any(expectations_of(f.func) for f in flows):
        raise DeclarationError(f"{place}: sink {sink.name} takes rows as they come; expect on the table it reads")
    if sink.format == "kafka" and options.get("topic"):
        topic, servers = options.pop("topic"), options.pop("kafka.bootstrap.servers", None)
        return KafkaSink(topic, None, servers, options)
    if sink.format == "delta" and options.get("path"):
        return DeltaPathSink(options["path"])
    raise DeclarationError(
        f"{place}: sink {sink.name}: a sink here is a Delta table at a path, "
        f"dp.create_sink({sink.name!r}, 'delta', {{'path': ...}}), or a Kafka topic, "
        f"dp.create_sink({sink.name!r}, 'kafka', {{'topic': ..., 'kafka.bootstrap.servers': ...}}) "
        f"(got {sink.format!r}, {dict(sink.options or {})})"
    )
