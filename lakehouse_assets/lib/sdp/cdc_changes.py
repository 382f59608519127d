"""An Auto CDC flow whose source is a view over raw files (``spark.readStream`` of a folder, or
Auto Loader): the everyday Lakeflow form, with a watermark or without.

The SCD sink rebuilds a key from every change of that key, so it must be able to read the
changes again; files read once as a stream cannot be. So the view's rows are kept first in a
streaming table of their own, ``<target>_changes`` (append-only, its own checkpoint, the view's
expectations), and the Auto CDC flow reads that table as its stream: the view's function runs
as written, and each change is taken in exactly once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.pipelines.output import StreamingTable as SdpStreamingTable

from lakehouse_assets.lib.declare.checks import expectation_met, scd2_valid, unique
from lakehouse_assets.lib.declare.inputs import stream
from lakehouse_assets.lib.declare.quarantine import Quarantine
from lakehouse_assets.lib.declare.sinks import AppendSink
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.api import expectations_of
from lakehouse_assets.lib.sdp.auto_cdc import cdc_sink
from lakehouse_assets.lib.sdp.flow_inputs import FlowInputs
from lakehouse_assets.lib.sdp.graph import CdcFlow, defined_at, where
from lakehouse_assets.lib.sdp.transform import PipelineQuery

if TYPE_CHECKING:
    from lakehouse_assets.lib.sdp.convert import Converter

SUFFIX = "_changes"


def cdc_over_files(
    converter: Converter, output: SdpStreamingTable, flow: CdcFlow, found: FlowInputs, views: tuple[str, ...]
) -> tuple[TableSpec, TableSpec]:
    """The changes table and the Auto CDC target it feeds (see the module's docstring).

    :param found: what the view reads, views followed.
    :param views: the views to compute, the source view last.
    """
    place = where(flow.source_code_location)
    name = f"{output.name}{SUFFIX}"
    if name in converter.graph.outputs:
        raise DeclarationError(
            f"{place}: the Auto CDC flow into {output.name} keeps the rows of the view {flow.source} in a table "
            f"named {name}, which this pipeline already defines; rename that dataset"
        )
    if not found.streams or any(found.tables.values()):
        raise DeclarationError(
            f"{place}: the Auto CDC flow into {output.name} reads the view {flow.source}, which must read its "
            "files as a stream (spark.readStream or Auto Loader) and no other stream"
        )
    spec, at = str(converter.loaded.spec_path), defined_at(flow)
    view_function = converter.planned[(flow.source, flow.source)].flow.func
    expectations = expectations_of(view_function)
    quarantined = any(e.action == "quarantine" for e in expectations)
    changes = TableSpec(
        name=name,
        transform=PipelineQuery(spec, flow.source, None, views, at),
        group=converter.group,
        inputs=found.declared(),
        sink=AppendSink(),
        expectations=expectations,
        quarantine=Quarantine(f"{name}_quarantine") if quarantined else None,
        description=(
            f"The changes the Auto CDC flow into {output.name} applies: the rows of the view {flow.source} over "
            "raw files, kept so a key's changes can be read again."
        ),
        tags={"sdp/dataset": "auto_cdc_changes"},
        checks=[expectation_met(e.name, e.condition, e.action) for e in expectations],
        file_streams=found.file_streams(),
    )
    keyed = scd2_valid(*flow.keys) if flow.stored_as_scd_type == 2 else unique(*flow.keys)
    target = converter.table(
        output,
        cdc_sink(flow),
        {name: stream(name)},
        [],
        transform=PipelineQuery(spec, name, None, (), at),
        key_checks=[keyed],
    )
    return changes, target
