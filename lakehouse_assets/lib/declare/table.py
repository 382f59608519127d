"""Declaring streaming tables: a decorated pure function returning a DataFrame.

    @streaming_table(group="silver", sink=merge(keys=["event_id"]), expectations=[...])
    def silver_events(bronze_events: DataFrame) -> DataFrame:
        return clean(bronze_events)

Each parameter names an input: by default the upstream Delta table of that name, read as a
stream. ``inputs=`` overrides that per parameter (a landing folder, a static read, a change feed).
The framework supplies the checkpoint, the sink, expectations, metadata and the Dagster asset.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Literal

from pyspark.sql import DataFrame

from lakehouse_assets.lib.declare.checks import (
    TableCheck,
    declared_checks,
    no_files_set_aside,
    quarantine_rate,
    quarantine_traceable,
    schema_unchanged,
)
from lakehouse_assets.lib.declare.expectations import Expectation
from lakehouse_assets.lib.declare.file_streams import FileStream
from lakehouse_assets.lib.declare.flows import AppendFlow, check_flows, flow_inputs
from lakehouse_assets.lib.declare.inputs import (
    Input,
    KafkaInput,
    LandingInput,
    inputs_of_kind,
    is_streaming,
    of_kind,
    stream,
)
from lakehouse_assets.lib.declare.quarantine import Quarantine
from lakehouse_assets.lib.declare.sinks import (
    AppendSink,
    TableSink,
)
from lakehouse_assets.lib.errors import DeclarationError

OutputMode = Literal["append", "update", "complete"]


@dataclass(frozen=True)
class TableSpec:
    """A declared streaming table; :func:`streaming_table` builds it from a function."""

    name: str
    transform: Callable[..., DataFrame]
    group: str
    inputs: dict[str, Input]
    sink: TableSink = field(default_factory=AppendSink)
    expectations: list[Expectation] = field(default_factory=list)
    quarantine: Quarantine | None = None
    columns: list[str] | None = None
    publish: Callable[[DataFrame], DataFrame] | None = None
    partition_by: list[str] = field(default_factory=list)
    cluster_by: list[str] = field(default_factory=list)
    table_properties: dict[str, str] = field(default_factory=dict)
    output_mode: OutputMode = "append"
    description: str | None = None
    column_descriptions: dict[str, str] = field(default_factory=dict)
    owners: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    freshness: timedelta | None = None
    checks: list[TableCheck] = field(default_factory=list)
    priority: int = 0
    flows: list[AppendFlow] = field(default_factory=list)
    flow: str | None = None
    """Which of the table's flows this is (see :meth:`flow_runs`); None: the table's own."""
    once: bool = False
    """This flow is a backfill that runs once (``append_flow(once=True)``)."""
    spark_conf: dict[str, str] = field(default_factory=dict)
    """Spark settings for this flow's query only (a pipeline's ``spark_conf=``)."""
    file_streams: tuple[FileStream, ...] = ()
    """Folders the function streams itself through Spark's file source (an SDP flow's
    ``spark.readStream...load(path)``): not read by the engine, known for the idle skip."""

    def __post_init__(self) -> None:
        """The refusals every way of building a table goes through: :func:`streaming_table`, and
        the SDP, Lakeflow, SQL-file and Auto Loader builders, which make specs directly."""
        quarantine = self.quarantine.table if self.quarantine else None
        self.sink.refuse(self.name, self.inputs, bool(self.expectations), quarantine)
        check_flows(self.name, self.transform, self.sink, self.flows, self.inputs)
        if self.partition_by and self.cluster_by:
            raise DeclarationError(f"{self.name}: a Delta table is partitioned or clustered, not both")

    @property
    def every_input(self) -> list[Input]:
        """What the table and each of its flows read (lineage, jobs, sensors)."""
        return list(self.inputs.values()) + [i for f in self.flows for i in f.inputs.values()]

    @property
    def upstream_tables(self) -> list[str]:
        return list(dict.fromkeys(i.upstream_table for i in self.every_input if i.upstream_table))

    @property
    def streamed_tables(self) -> list[str]:
        """The upstream tables read as a stream or change feed by the table or a flow."""
        return [i.upstream_table for i in self.every_input if i.upstream_table and i.streaming]

    @property
    def lookup_tables(self) -> list[str]:
        """The upstream tables read as a static snapshot (lookups), not as a stream."""
        return [i.upstream_table for i in self.every_input if i.upstream_table and not i.streaming]

    @property
    def landing_sources(self) -> list[str]:
        return list(dict.fromkeys(i.source for i in of_kind(self.every_input, LandingInput) if i.path is None))

    @property
    def kafka_inputs(self) -> list[KafkaInput]:
        return of_kind(self.every_input, KafkaInput)

    @property
    def checkpoint_name(self) -> str:
        """The checkpoint folder's name under ``checkpoints/``: the table's, or its flow's inside it."""
        return self.name if self.flow is None else f"{self.name}/flows/{self.flow}"

    def flow_runs(self) -> list[TableSpec]:
        """The table's own flow, then one table per declared flow: same outputs, the flow's
        inputs and function, its own checkpoint. Without the checks: the run evaluates them, and
        a query's handler, pickled into an engine's Python worker, carries nothing of theirs."""
        own = replace(self, flows=[], checks=[])
        return [own] + [
            replace(
                own,
                flow=f.name,
                inputs=flow_inputs(self.inputs, f),
                transform=f.transform or self.transform,
                once=f.once,
                spark_conf=f.spark_conf,
                file_streams=f.file_streams,
            )
            for f in self.flows
        ]

    @property
    def streaming_inputs(self) -> dict[str, Input]:
        """The inputs read as streams (landing files, streams, change feeds): not static ones."""
        return {p: i for p, i in self.inputs.items() if is_streaming(i)}

    @property
    def outputs(self) -> list[str]:
        return [self.name] + ([self.quarantine.table] if self.quarantine else [])

    @property
    def writes_delta(self) -> bool:
        """False for a sink (:func:`to_kafka`, :func:`to_delta`): its name is an asset, not a table under the root."""
        return self.sink.writes_table

    @property
    def delta_outputs(self) -> list[str]:
        return [name for name in self.outputs if name != self.name or self.writes_delta]

    @property
    def all_checks(self) -> list[TableCheck]:
        """Declared checks plus those every table gets: schema, landed files set aside (with a
        landing input) and, with a quarantine, its rate and traceability."""
        defaults = [schema_unchanged()] if self.writes_delta else []
        intakes = [
            (flow.checkpoint_name, parameter)
            for flow in self.flow_runs()
            for parameter in inputs_of_kind(flow.inputs, LandingInput)
        ]
        if intakes:
            defaults.append(no_files_set_aside(intakes))
        if self.quarantine:
            defaults.append(quarantine_rate(self.quarantine.max_share))
            defaults.append(quarantine_traceable(self.quarantine.table, self.quarantine.traced_columns))
        declared = {c.name for c in self.checks}
        return self.checks + [c for c in defaults if c.name not in declared]

    @property
    def is_stateful(self) -> bool:
        return any(i.watermark for i in self.inputs.values())


def _declared_inputs(fn: Callable[..., DataFrame], inputs: dict[str, Input] | None) -> dict[str, Input]:
    params = list(inspect.signature(fn).parameters)
    declared = dict(inputs or {})
    unknown = set(declared) - set(params)
    if unknown:
        raise DeclarationError(f"{fn.__name__}: inputs {sorted(unknown)} are not parameters of the function")
    return {p: declared.get(p) or stream(p) for p in params}


def streaming_table(
    *,
    group: str,
    inputs: dict[str, Input] | None = None,
    name: str | None = None,
    sink: TableSink | None = None,
    expectations: list[Expectation] | None = None,
    quarantine: Quarantine | None = None,
    columns: list[str] | None = None,
    publish: Callable[[DataFrame], DataFrame] | None = None,
    partition_by: list[str] | None = None,
    cluster_by: list[str] | None = None,
    table_properties: dict[str, str] | None = None,
    output_mode: OutputMode = "append",
    description: str | None = None,
    column_descriptions: dict[str, str] | None = None,
    owners: list[str] | None = None,
    tags: dict[str, str] | None = None,
    freshness: timedelta | None = None,
    checks: list[TableCheck] | None = None,
    priority: int = 0,
    flows: list[AppendFlow] | None = None,
) -> Callable[[Callable[..., DataFrame]], TableSpec]:
    """Declare a streaming Delta table from a pure function of its input DataFrames.

    :param group: the Dagster asset group (``bronze``, ``silver``, ``gold``).
    :param inputs: per parameter of the function, what it reads; a parameter not listed reads
        the upstream table of its own name as a stream.
    :param name: the table's name (default: the function's name); also its asset key.
    :param sink: how each micro-batch is written: ``append()`` (default), ``merge(...)``,
        ``recompute(...)``, ``overwrite()`` or ``to_kafka(...)``.
    :param expectations: named row conditions with an action (warn, drop, quarantine, fail).
    :param quarantine: where rows failing ``quarantine`` expectations go.
    :param columns: the table's columns, in order (default: every column the function returns).
    :param publish: turns the function's rows into the table's rows (default: select ``columns``).
    :param partition_by: Delta partition columns.
    :param cluster_by: Delta liquid clustering columns (set when the table is created; OPTIMIZE
        clusters the data). Not together with ``partition_by``.
    :param table_properties: Delta table properties (change data feed is always on).
    :param output_mode: the streaming output mode (``append`` for watermark-bound aggregations).
    :param description: the asset's description (default: the function's docstring).
    :param column_descriptions: per column, what it holds (shown in the asset's column schema);
        the framework's own columns (``_source_file``, ``_rescued_data``, ...) are described already.
    :param owners: the asset's owners (``team:...`` or e-mail addresses).
    :param tags: the asset's tags.
    :param freshness: the asset fails its freshness policy when not updated for this long.
    :param checks: asset checks evaluated after each run (schema and quarantine rate are added).
    :param priority: among steps of one run that are ready together, higher runs first.
    :param flows: further streams into the table (:func:`append_flow`), each with its own
        checkpoint; every run runs the table's own query, then each flow's.
    """

    def decorate(fn: Callable[..., DataFrame]) -> TableSpec:
        table_name = name or fn.__name__
        declared = _declared_inputs(fn, inputs)
        chosen_sink = sink or AppendSink()
        return TableSpec(
            name=table_name,
            transform=fn,
            group=group,
            inputs=declared,
            sink=chosen_sink,
            expectations=list(expectations or []),
            quarantine=quarantine,
            columns=columns,
            publish=publish,
            partition_by=list(partition_by or []),
            cluster_by=list(cluster_by or []),
            table_properties=dict(table_properties or {}),
            output_mode=output_mode,
            description=description or inspect.getdoc(fn),
            column_descriptions=dict(column_descriptions or {}),
            owners=list(owners or []),
            tags=dict(tags or {}),
            freshness=freshness,
            checks=declared_checks(table_name, checks),
            priority=priority,
            flows=list(flows or []),
        )

    return decorate
