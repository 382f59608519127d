"""More than one stream into one table: each flow is its own query with its own checkpoint,
appending into the same Delta table (Spark Declarative Pipelines' ``append_flow``).

    @streaming_table(group="bronze", inputs={"lines": landing("events")},
                     flows=[append_flow("kafka", inputs={"lines": kafka("events")})])
    def bronze_events(lines): ...

A flow replaces some of the table's inputs and runs the table's function on them (or a function
of its own). A flow whose Kafka input has no broker configured is skipped, saying so, so a
pipeline can declare the topic and still run where no broker exists.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from lakehouse_assets.lib.declare.file_streams import FileStream
from lakehouse_assets.lib.declare.inputs import Input, is_streaming
from lakehouse_assets.lib.declare.sinks import TableSink
from lakehouse_assets.lib.errors import DeclarationError

_FLOW_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class AppendFlow:
    """A further stream into a table; :func:`append_flow` builds it."""

    name: str
    inputs: dict[str, Input]
    transform: Callable[..., DataFrame] | None = None
    once: bool = False
    spark_conf: dict[str, str] = field(default_factory=dict)
    file_streams: tuple[FileStream, ...] = ()
    """Folders the flow's function streams itself (an SDP flow's ``spark.readStream...load``)."""


def append_flow(
    name: str,
    *,
    inputs: dict[str, Input],
    transform: Callable[..., DataFrame] | None = None,
    once: bool = False,
    spark_conf: dict[str, str] | None = None,
) -> AppendFlow:
    """Declare one more flow into a table, checkpointed at ``checkpoints/<table>/flows/<name>``.

    :param name: the flow's name (letters, digits, ``_`` and ``-``), unique within its table.
    :param inputs: per parameter of the function, what this flow reads instead of the table's
        own input; a parameter of the flow's function not listed reads what the table declares.
    :param transform: the flow's own function (default: the table's); it returns the table's
        columns.
    :param once: a backfill: the flow reads its inputs as snapshots and appends them on the
        table's next run only (again after a full refresh), as Lakeflow's ``append_flow(once=True)``.
    :param spark_conf: Spark settings for this flow's query only (``spark.sql.shuffle.partitions``...).
    """
    if not _FLOW_NAME.match(name):
        raise DeclarationError(f"append_flow({name!r}): a flow's name uses letters, digits, '_' and '-' only")
    return AppendFlow(name, dict(inputs), transform, once, dict(spark_conf or {}))


def flow_inputs(table_inputs: dict[str, Input], flow: AppendFlow) -> dict[str, Input]:
    """What ``flow`` reads: its own inputs, and the table's for the parameters of its function
    that it does not list. A function of its own gets the table's inputs only for parameters it
    names: ``**inputs`` (a pipeline's flow, whose inputs come from its own plan) takes no others.

    :param table_inputs: the table's inputs by parameter.
    :param flow: one of its further flows.
    """
    merged = {**table_inputs, **flow.inputs}
    if flow.transform is None:
        return merged
    parameters = inspect.signature(flow.transform).parameters
    named = {n for n, p in parameters.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    return {**{n: s for n, s in table_inputs.items() if n in named}, **flow.inputs}


def check_flows(
    name: str, fn: Callable[..., DataFrame], sink: TableSink, flows: list[AppendFlow], inputs: dict[str, Input]
) -> None:
    """Refuse flows a table cannot have: on a recompute or overwrite table, two of one name, a
    once-flow with a stream, inputs that are not parameters of the flow's function."""
    if flows and not sink.takes_flows:
        raise DeclarationError(
            f"{name}: a recompute or overwrite table derives its rows from its inputs; it cannot have append flows"
        )
    seen: set[str] = set()
    for flow in flows:
        if flow.name in seen:
            raise DeclarationError(f"{name}: two flows are named {flow.name!r}")
        seen.add(flow.name)
        if flow.once and any(is_streaming(i) for i in flow_inputs(inputs, flow).values()):
            raise DeclarationError(f"{name}: once-flow {flow.name!r} is a backfill: give it snapshots (static inputs)")
        parameters = inspect.signature(flow.transform or fn).parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            continue  # a function taking **inputs (a pipeline's dataset) takes any
        unknown = set(flow.inputs) - set(parameters)
        if unknown:
            raise DeclarationError(
                f"{name}: flow {flow.name!r} inputs {sorted(unknown)} are not parameters of its function"
            )
