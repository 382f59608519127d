"""The graph a pipeline's files declare: pyspark's graph-element registry, implemented here.

While the files load, ``pyspark.pipelines``' decorators (``@dp.table``, ``@dp.materialized_view``,
``@dp.temporary_view``, ``dp.create_streaming_table``, ``@dp.append_flow``,
``dp.create_auto_cdc_flow``, ``dp.create_sink``) hand their outputs and flows to the active
registry (``graph_element_registration_context``): this one records them, with where each was
declared, for :mod:`.convert` to turn into tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.pipelines.flow import AutoCdcFlow, Flow
from pyspark.pipelines.graph_element_registry import GraphElementRegistry
from pyspark.pipelines.output import Output, Table
from pyspark.pipelines.source_code_location import SourceCodeLocation

from lakehouse_assets.lib.errors import DeclarationError


def defined_at(element: object) -> tuple[str, int]:
    """(file, line) where a flow or dataset was defined: a transform's code reference."""
    location = element.source_code_location  # type: ignore[attr-defined]
    return location.filename, location.line_number or 1


def where(location: SourceCodeLocation | None) -> str:
    """``file:line`` of a definition, for messages."""
    if location is None:
        return "an unknown place"
    return f"{location.filename}:{location.line_number}" if location.line_number else location.filename


@dataclass(frozen=True, kw_only=True)
class CdcFlow:
    """An Auto CDC flow, from pyspark's ``create_auto_cdc_flow`` or this project's (which also
    takes SCD type 2 and the columns whose changes open a version)."""

    name: str
    target: str
    source: str
    keys: list[str]
    source_code_location: SourceCodeLocation
    stored_as_scd_type: int = 1
    sequence_by: str = ""
    apply_as_deletes: str | None = None
    column_list: list[str] | None = None
    except_column_list: list[str] | None = None
    track_history_column_list: list[str] | None = None
    track_history_except_column_list: list[str] | None = None
    # Lakeflow's apply_changes(where=...): only the changes meeting this SQL condition apply.
    where: str | None = None
    # create_auto_cdc_from_snapshot_flow: the source is a full snapshot read each run.
    from_snapshot: bool = False


def column_name(column: Any, what: str, location: SourceCodeLocation) -> str:
    """The column a string or a plain column reference names, whatever session built it."""
    if isinstance(column, str):
        return column
    expr = getattr(column, "_expr", None)
    name = getattr(expr, "_unparsed_identifier", None)
    if name is None and getattr(column, "_jc", None) is not None:  # a classic Column
        name = column._jc.toString()
    if name is None:  # any other Column of a plain name shows as Column<'name'>
        shown = re.fullmatch(r"Column<'(\w+)'>", repr(column))
        name = shown[1] if shown else None
    if name is None or not str(name).replace("_", "").isalnum():
        raise DeclarationError(
            f"{where(location)}: {what} must name a column (a string or col('name')), not {column!r}"
        )
    return str(name)


def column_names(columns: list[Any] | None, what: str, location: SourceCodeLocation) -> list[str] | None:
    """:func:`column_name` of each, or None when no list was given."""
    return None if columns is None else [column_name(c, what, location) for c in columns]


def sql_text(condition: Any) -> str | None:
    """A condition given as SQL text or as ``expr('...')``, as SQL text."""
    if condition is None or isinstance(condition, str):
        return condition
    expr = getattr(condition, "_expr", None)
    text = getattr(expr, "_expr", None)  # pyspark.sql.connect.expressions.SQLExpression
    if isinstance(text, str):
        return text
    if getattr(condition, "_jc", None) is not None:
        return str(condition._jc.toString())
    raise DeclarationError(f"a condition must be SQL text or expr('...'), not {condition!r}")


def from_pyspark_cdc(flow: AutoCdcFlow) -> CdcFlow:
    loc = flow.source_code_location
    return CdcFlow(
        name=flow.name or flow.target,
        target=flow.target,
        source=flow.source,
        keys=column_names(flow.keys, "keys", loc) or [],
        sequence_by=column_name(flow.sequence_by, "sequence_by", loc),
        apply_as_deletes=sql_text(flow.apply_as_deletes),
        column_list=column_names(flow.column_list, "column_list", loc),
        except_column_list=column_names(flow.except_column_list, "except_column_list", loc),
        stored_as_scd_type=int(flow.stored_as_scd_type or 1),
        source_code_location=loc,
    )


@dataclass
class PipelineGraph(GraphElementRegistry):
    """What the pipeline's files declared, in declaration order."""

    outputs: dict[str, Output] = field(default_factory=dict)
    flows: list[Flow] = field(default_factory=list)
    cdc_flows: list[CdcFlow] = field(default_factory=list)
    # What registers a SQL file's statements (``sql_files.register_sql_file``), given by the
    # loader: SQL files build on this module, so it cannot import them.
    sql_registrar: Callable[[PipelineGraph, str, Path], None] | None = None

    def register_output(self, output: Output) -> None:
        place = where(output.source_code_location)
        if isinstance(output, Table) and output.format not in (None, "delta"):
            raise DeclarationError(f"{place}: {output.name}: format={output.format!r}; tables here are Delta tables")
        seen = self.outputs.get(output.name)
        if seen is not None:
            raise DeclarationError(
                f"{where(output.source_code_location)}: {output.name} is defined twice "
                f"(first at {where(seen.source_code_location)})"
            )
        self.outputs[output.name] = output

    def register_flow(self, flow: Flow) -> None:
        for seen in self.flows:
            if seen.name == flow.name and seen.target == flow.target:
                raise DeclarationError(
                    f"{where(flow.source_code_location)}: flow {flow.name} into {flow.target} is defined "
                    f"twice (first at {where(seen.source_code_location)})"
                )
        self.flows.append(flow)

    def register_auto_cdc_flow(self, flow: AutoCdcFlow | CdcFlow) -> None:
        self.cdc_flows.append(flow if isinstance(flow, CdcFlow) else from_pyspark_cdc(flow))

    def register_sql(self, sql_text: str, file_path: Path) -> None:
        if self.sql_registrar is None:
            raise DeclarationError(f"{file_path}: this pipeline graph takes no SQL files")
        self.sql_registrar(self, sql_text, file_path)

    def flows_into(self, target: str) -> list[Flow]:
        return [f for f in self.flows if f.target == target]

    def cdc_into(self, target: str) -> list[CdcFlow]:
        return [f for f in self.cdc_flows if f.target == target]
