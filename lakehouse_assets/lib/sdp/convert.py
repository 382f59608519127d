"""From a pipeline's graph to streaming tables the engine runs, one per dataset.

- ``@dp.table`` / ``create_streaming_table`` + ``@dp.append_flow``: a streaming table; its first
  flow is the table's own query, each further one an :func:`~lakehouse_assets.lib.append_flow`
  with its own checkpoint.
- ``create_auto_cdc_flow``: a streaming table written by the SCD type 1 or 2 sink;
  ``create_auto_cdc_from_snapshot_flow``: one its source's snapshots are applied to.
- ``@dp.materialized_view``: recomputed by keys from its one input's change feed when it is a
  GROUP BY of plain columns over one dataset (:func:`.plan_reading.incremental_keys`); else recomputed
  whole when an input moved (:func:`~lakehouse_assets.lib.overwrite`).
- ``@dp.temporary_view``: no table; computed inside each reader.

Each function's inputs are the datasets its plan reads, as it reads them; lineage follows.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from pyspark.pipelines.flow import Flow
from pyspark.pipelines.output import MaterializedView, Output, Sink, TemporaryView
from pyspark.pipelines.output import StreamingTable as SdpStreamingTable

from lakehouse_assets.lib.declare.cdc import snapshot_cdc
from lakehouse_assets.lib.declare.checks import TableCheck, expectation_met, scd2_valid, unique
from lakehouse_assets.lib.declare.file_streams import FileStream
from lakehouse_assets.lib.declare.flows import AppendFlow
from lakehouse_assets.lib.declare.inputs import Input, change_feed
from lakehouse_assets.lib.declare.quarantine import Quarantine
from lakehouse_assets.lib.declare.registry import refuse_cycles, refuse_shared_cleaning
from lakehouse_assets.lib.declare.sinks import AppendSink, OverwriteSink, RecomputeSink, TableSink, recompute
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.api import expectations_of
from lakehouse_assets.lib.sdp.auto_cdc import cdc_sink
from lakehouse_assets.lib.sdp.cdc_changes import cdc_over_files
from lakehouse_assets.lib.sdp.declared_schema import DeclaredSchema
from lakehouse_assets.lib.sdp.dry_run import Planned, load_and_plan
from lakehouse_assets.lib.sdp.flow_inputs import FlowInputs, check_streams, declared_sink, further_flow, is_once
from lakehouse_assets.lib.sdp.graph import CdcFlow, defined_at, where
from lakehouse_assets.lib.sdp.lakeflow import LAKEFLOW_TABLE
from lakehouse_assets.lib.sdp.loading import LoadedPipeline
from lakehouse_assets.lib.sdp.plan_reading import row_wise_source
from lakehouse_assets.lib.sdp.transform import PipelineQuery


class Converter:
    def __init__(self, loaded: LoadedPipeline, planned: dict[tuple[str, str], Planned]) -> None:
        self.loaded = loaded
        self.graph = loaded.graph
        self.planned = planned
        self.group = re.sub(r"[^A-Za-z0-9_]", "_", loaded.spec.name)
        self.changes_tables: list[TableSpec] = []  # what Auto CDC flows over raw files keep first

    def inputs_of(self, planned: Planned, visiting: tuple[str, ...] = ()) -> FlowInputs:
        place = where(planned.flow.source_code_location)
        found = FlowInputs.of_files(list(planned.reads.files), place)
        for read in planned.reads.tables:
            output = self.graph.outputs.get(read.name)
            if isinstance(output, TemporaryView):
                if read.name in visiting:
                    raise DeclarationError(
                        f"{place}: temporary views read each other in a cycle: {' -> '.join([*visiting, read.name])}"
                    )
                inner = self.inputs_of(self.planned[(read.name, read.name)], (*visiting, read.name))
                for name, streaming in inner.tables.items():
                    if found.tables.get(name, streaming) != streaming:
                        raise DeclarationError(
                            f"{place}: {planned.flow.target} reads {name} both as a stream and as a snapshot"
                        )
                    found.tables[name] = streaming
                found.files += inner.files
                found.auto_loader.update(inner.auto_loader)
                found.catalog += [n for n in inner.catalog if n not in found.catalog]
                found.views += [v for v in [*inner.views, read.name] if v not in found.views]
            elif output is None and not read.streaming:  # a table of the catalog, read at run time
                found.catalog += [read.name] if read.name not in found.catalog else []
            elif output is None or isinstance(output, Sink):
                what = (
                    "a sink" if output is not None else "not a dataset of this pipeline (a stream of it cannot be read)"
                )
                raise DeclarationError(f"{place}: {planned.flow.target} reads {read.name}, which is {what}")
            elif found.tables.get(read.name, read.streaming) != read.streaming:
                raise DeclarationError(
                    f"{place}: {planned.flow.target} reads {read.name} both as a stream and as a snapshot"
                )
            else:
                found.tables[read.name] = read.streaming
        return found

    def query(self, flow: Flow, inputs: FlowInputs) -> PipelineQuery:
        return PipelineQuery(str(self.loaded.spec_path), flow.target, flow.name, tuple(inputs.views), defined_at(flow))

    def table(
        self,
        output: Output,
        sink: TableSink,
        inputs: dict[str, Input],
        queries: list[Flow],
        transform: PipelineQuery,
        flows: list[AppendFlow] | None = None,
        flow: str | None = None,
        key_checks: list[TableCheck] | None = None,
        file_streams: tuple[FileStream, ...] = (),
    ) -> TableSpec:
        """The table of ``output``; expectations and ``spark_conf`` from the functions of ``queries``
        (its own first); ``flows`` its further flows, ``flow`` the name of its own (None: named like
        the table); ``key_checks`` what its declared keys promise; ``file_streams`` the folders its
        own flow's code streams."""
        expectations = list({e.name: e for f in queries for e in expectations_of(f.func)}.values())
        quarantined = any(e.action == "quarantine" for e in expectations)
        kind = "materialized_view" if isinstance(output, MaterializedView) else "streaming_table"
        schema = getattr(output, "schema", None)
        query: Any = DeclaredSchema(transform, output.name, schema) if schema is not None else transform
        if schema is not None:  # a flow without a function of its own runs the table's, conformed already
            flows = [
                replace(f, transform=DeclaredSchema(f.transform, output.name, schema)) if f.transform else f
                for f in flows or []
            ]
        return TableSpec(
            name=output.name,
            transform=query,
            group=self.group,
            inputs=inputs,
            sink=sink,
            expectations=expectations,
            quarantine=Quarantine(f"{output.name}_quarantine") if quarantined else None,
            partition_by=list(getattr(output, "partition_cols", None) or []),
            cluster_by=list(getattr(output, "cluster_by", None) or []),
            table_properties=dict(getattr(output, "table_properties", None) or {}),
            description=output.comment or f"{kind.replace('_', ' ')} from {where(output.source_code_location)}",
            tags={"sdp/dataset": kind},
            checks=[*(key_checks or []), *(expectation_met(e.name, e.condition, e.action) for e in expectations)],
            flows=flows or [],
            flow=flow,
            spark_conf=dict(queries[0].spark_conf or {}) if queries else {},
            file_streams=file_streams,
        )

    def materialized_view(self, output: MaterializedView) -> TableSpec:
        flows = self.graph.flows_into(output.name)
        if len(flows) != 1:
            raise DeclarationError(
                f"{where(output.source_code_location)}: materialized view {output.name} has {len(flows)} flows; it has one query"
            )
        planned = self.planned[(output.name, flows[0].name)]
        found = self.inputs_of(planned)
        if found.streams:
            raise DeclarationError(
                f"{where(output.source_code_location)}: materialized view {output.name} reads a stream; it reads snapshots (spark.read)"
            )
        if any(e.action == "quarantine" for e in expectations_of(flows[0].func)):
            raise DeclarationError(
                f"{where(output.source_code_location)}: {output.name}: a materialized view drops, warns or fails on expectations; quarantine is for streaming tables"
            )
        sink: TableSink
        # The recompute strategy finds the keys to rebuild from the function's rows for the new
        # input rows after the expectations: with expectations it could miss one, so full.
        expectations = expectations_of(flows[0].func)
        if (
            planned.incremental
            and not expectations
            and not found.files
            and not found.views
            and not found.catalog
            and list(found.tables) == [planned.incremental[1]]
        ):
            keys, source = planned.incremental
            inputs: dict[str, Input] = {source: change_feed(source)}
            sink = recompute(keys, reread_by=keys[0])
            key_checks = [unique(*keys)]
        else:
            inputs, sink, key_checks = found.declared(), OverwriteSink(always=bool(found.files or found.catalog)), []
        return self.table(output, sink, inputs, flows, transform=self.query(flows[0], found), key_checks=key_checks)

    def snapshot_table(self, output: SdpStreamingTable, flow: CdcFlow) -> TableSpec:
        """A snapshot flow: the source's snapshot, read each run, applied as changes."""
        place = where(flow.source_code_location)
        source = self.graph.outputs.get(flow.source)
        if isinstance(source, TemporaryView):
            found = self.inputs_of(self.planned[(flow.source, flow.source)], (flow.source,))
            views = (*found.views, flow.source)
        elif isinstance(source, (SdpStreamingTable, MaterializedView)):
            found, views = FlowInputs(tables={flow.source: False}), ()
        else:
            raise DeclarationError(
                f"{place}: the snapshot flow into {output.name} reads {flow.source}, which is not a dataset of this pipeline"
            )
        if found.streams:
            raise DeclarationError(
                f"{place}: the snapshot flow into {output.name} reads a stream; a snapshot is spark.read"
            )
        sink = snapshot_cdc(keys=list(flow.keys), scd_type=flow.stored_as_scd_type, always=bool(found.files))
        transform = PipelineQuery(str(self.loaded.spec_path), flow.source, None, views, defined_at(flow))
        keyed = scd2_valid(*flow.keys) if flow.stored_as_scd_type == 2 else unique(*flow.keys)
        return self.table(output, sink, found.declared(), [], transform=transform, key_checks=[keyed])

    def cdc_table(self, output: SdpStreamingTable) -> TableSpec:
        (flow,) = self.graph.cdc_into(output.name)
        if flow.from_snapshot:
            return self.snapshot_table(output, flow)
        place = where(flow.source_code_location)
        source = self.graph.outputs.get(flow.source)
        if isinstance(source, TemporaryView):
            view = self.planned[(flow.source, flow.source)]
            found = self.inputs_of(view, (flow.source,))
            views = (*found.views, flow.source)
            if found.files or found.auto_loader:
                changes, target = cdc_over_files(self, output, flow, found, views)
                self.changes_tables.append(changes)
                return target
            # The sink re-reads the table under the view by the first key: the view must keep it.
            if row_wise_source(view.plan, flow.keys[:1]) not in found.tables or len(found.tables) != 1:
                raise DeclarationError(
                    f"{place}: the Auto CDC flow into {output.name} reads the view {flow.source}, which must be row-wise "
                    f"operators over one dataset that keep {flow.keys[0]} as it is; make {flow.source} a @dp.table"
                )
        elif isinstance(source, (SdpStreamingTable, MaterializedView)):
            found, views = FlowInputs(tables={flow.source: True}), ()
        else:
            raise DeclarationError(
                f"{place}: the Auto CDC flow into {output.name} reads {flow.source}, which is not a dataset of this pipeline"
            )
        if [n for n, streaming in found.tables.items() if streaming] == [] or found.files:
            raise DeclarationError(
                f"{place}: the Auto CDC flow into {output.name} reads its changes from one dataset as a stream"
            )
        transform = PipelineQuery(str(self.loaded.spec_path), flow.source, None, views, defined_at(flow))
        sink: RecomputeSink = cdc_sink(flow)
        keyed = scd2_valid(*flow.keys) if flow.stored_as_scd_type == 2 else unique(*flow.keys)
        return self.table(output, sink, found.declared(), [], transform=transform, key_checks=[keyed])

    def streaming_table(self, output: SdpStreamingTable | Sink, sink: TableSink | None = None) -> TableSpec:
        cdc, flows = self.graph.cdc_into(output.name), self.graph.flows_into(output.name)
        place = where(output.source_code_location)
        if cdc:
            if len(cdc) > 1 or flows or isinstance(output, Sink):
                raise DeclarationError(
                    f"{place}: {output.name} is written by an Auto CDC flow, which must be its only flow (of a table)"
                )
            return self.cdc_table(output)
        if not flows:
            raise DeclarationError(
                f"{place}: streaming table {output.name} has no flow: add @dp.append_flow(target={output.name!r})"
            )
        found = [self.inputs_of(self.planned[(f.target, f.name)]) for f in flows]
        if len(flows) == 1 and not found[0].streams and getattr(flows[0].func, LAKEFLOW_TABLE, False):
            # Lakeflow's @dlt.table over a batch query is a materialized view.
            return self.materialized_view(MaterializedView(**{f.name: getattr(output, f.name) for f in fields(output)}))
        check_streams(output.name, flows, found)
        # Each flow keeps its checkpoint by its name, whatever order the files declare flows in:
        # the table's own checkpoint only for the flow named like the table (@dp.table).
        first = next((i for i, f in enumerate(flows) if f.name == output.name), None)
        first = next((i for i, f in enumerate(flows) if not is_once(f)), 0) if first is None else first
        order = [first] + [i for i in range(len(flows)) if i != first]
        flows, found = [flows[i] for i in order], [found[i] for i in order]
        further = [further_flow(f, i, self.query(f, i)) for f, i in zip(flows[1:], found[1:], strict=True)]
        own_flow = None if flows[0].name == output.name else flows[0].name
        return self.table(
            output,
            sink or AppendSink(),
            found[0].declared(),
            flows,
            transform=self.query(flows[0], found[0]),
            flows=further,
            flow=own_flow,
            file_streams=found[0].file_streams(),
        )

    def tables(self) -> list[TableSpec]:
        flows: list[Any] = [*self.graph.flows, *self.graph.cdc_flows]
        for flow in flows:
            if flow.target not in self.graph.outputs:
                raise DeclarationError(
                    f"{where(flow.source_code_location)}: flow {flow.name} targets {flow.target}, which is not defined"
                )
        tables: list[TableSpec] = []
        for output in self.graph.outputs.values():
            if getattr(output, "partition_cols", None) and getattr(output, "cluster_by", None):
                place = where(output.source_code_location)
                raise DeclarationError(f"{place}: {output.name} is partitioned or clustered, not both")
            if isinstance(output, Sink):
                tables.append(self.streaming_table(output, declared_sink(output, self.graph.flows_into(output.name))))
            if isinstance(output, MaterializedView):
                tables.append(self.materialized_view(output))
            elif isinstance(output, SdpStreamingTable):
                tables.append(self.streaming_table(output))
        tables += self.changes_tables
        refuse_cycles(tables)
        refuse_shared_cleaning(tables)
        return tables


def pipeline_tables(spec_path: Path) -> list[TableSpec]:
    """The tables of the pipeline whose spec is ``spec_path`` (see the module's docstring)."""
    return Converter(*load_and_plan(spec_path)).tables()
