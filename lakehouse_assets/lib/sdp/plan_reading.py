"""What a query reads and whether it can be maintained incrementally, from its Spark Connect plan.

A pipeline function is called once while the definitions load, with a plan-only session; the
unresolved plan it returns names every table it reads (``spark.read.table``,
``spark.readStream.table``) and every path it loads, without any Spark server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from lakehouse_assets.lib.declare.file_streams import FileStream

# Operators between an aggregation and its one table that keep each grouping key's rows to
# themselves: recomputing a key from its own input rows is then exact. Above the aggregation
# only those that keep every row (a HAVING filter would hide a key its new rows do not reach).
_ROW_WISE = {"filter", "project", "with_columns", "drop", "sort", "with_columns_renamed", "to_df"}
_ABOVE = _ROW_WISE - {"filter"}


@dataclass(frozen=True)
class TableRead:
    name: str
    streaming: bool
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class FileRead:
    format: str
    paths: tuple[str, ...]
    streaming: bool
    options: tuple[tuple[str, str], ...] = ()
    schema: str | None = None


@dataclass(frozen=True)
class Reads:
    tables: list[TableRead]
    files: list[FileRead]


def file_streams_of(files: list[FileRead]) -> tuple[FileStream, ...]:
    """The folders ``files`` (reads the flow's own code makes) stream; a stream naming no path
    (Kafka, rate) as an empty one, which the run cannot check."""
    return tuple(FileStream(path, f.options) for f in files if f.streaming for path in f.paths or [""])


def plan_of(df: Any) -> Message:
    """The unresolved plan of a Spark Connect DataFrame."""
    return df._plan.plan(df.sparkSession.client)


def _messages(message: Message, kind: str) -> list[Message]:
    """Every message of type ``kind`` (``Relation``, ``Expression``) inside ``message``, itself
    first (subqueries included)."""
    found = [message] if message.DESCRIPTOR.name == kind else []
    for field, value in message.ListFields():
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        for item in value if field.is_repeated else [value]:
            if isinstance(item, Message):
                found += _messages(item, kind)
    return found


def _relations(message: Message) -> list[Message]:
    return _messages(message, "Relation")


def _has_window(plan: Message) -> bool:
    return any(e.WhichOneof("expr_type") == "window" for e in _messages(plan, "Expression"))


def reads_of(plan: Message) -> Reads:
    tables: list[TableRead] = []
    files: list[FileRead] = []
    for relation in _relations(plan):
        if relation.WhichOneof("rel_type") != "read":
            continue
        read = relation.read
        if read.WhichOneof("read_type") == "named_table":
            options = tuple(sorted(read.named_table.options.items()))
            found = TableRead(read.named_table.unparsed_identifier, read.is_streaming, options)
            if found not in tables:
                tables.append(found)
        else:
            source = read.data_source
            files.append(
                FileRead(
                    source.format or "parquet",
                    tuple(source.paths),
                    read.is_streaming,
                    tuple(sorted(source.options.items())),
                    source.schema or None,
                )
            )
    return Reads(tables, files)


def _op(relation: Message) -> str:
    return relation.WhichOneof("rel_type") or ""


def _input(relation: Message) -> Message:
    return getattr(relation, _op(relation)).input


def _redefines(relation: Message, keys: list[str]) -> bool:
    """Whether a row-wise operator gives one of ``keys`` a new meaning or removes it."""
    op = _op(relation)
    if op == "with_columns":
        return any(alias.name and alias.name[0] in keys for alias in relation.with_columns.aliases)
    if op == "project":
        plain = {
            e.unresolved_attribute.unparsed_identifier
            for e in relation.project.expressions
            if e.WhichOneof("expr_type") == "unresolved_attribute"
        }
        named = {e.alias.name[0] for e in relation.project.expressions if e.WhichOneof("expr_type") == "alias"}
        star = any(e.WhichOneof("expr_type") == "unresolved_star" for e in relation.project.expressions)
        return bool(set(keys) & named) or not (star or set(keys) <= plain)
    if op == "drop":
        return any(e.unresolved_attribute.unparsed_identifier in keys for e in relation.drop.columns) or bool(
            set(keys) & set(relation.drop.column_names)
        )
    return op in ("with_columns_renamed", "to_df")


def incremental_keys(plan: Message) -> tuple[list[str], str] | None:
    """``(grouping keys, the table read)`` when the query is a GROUP BY of plain columns over
    one table through row-wise operators that keep those columns (and only row-wise operators
    above it); None when it must be recomputed whole."""
    if _has_window(plan):
        return None
    relation = plan
    above: list[Message] = []
    while _op(relation) in _ABOVE:
        above.append(relation)
        relation = _input(relation)
    if _op(relation) != "aggregate":
        return None
    aggregate = relation.aggregate
    if aggregate.group_type != aggregate.GROUP_TYPE_GROUPBY or not aggregate.grouping_expressions:
        return None
    if any(e.WhichOneof("expr_type") != "unresolved_attribute" for e in aggregate.grouping_expressions):
        return None
    keys = [e.unresolved_attribute.unparsed_identifier for e in aggregate.grouping_expressions]
    if any("." in k or "`" in k for k in keys) or any(_redefines(r, keys) for r in above):
        return None
    source = row_wise_source(aggregate.input, keys)
    return (keys, source) if source else None


def row_wise_source(plan: Message, keys: list[str]) -> str | None:
    """The one table ``plan`` reads when it is only row-wise operators over that read that keep
    ``keys`` as they are (so the rows of a key come from the table's rows of that key)."""
    if _has_window(plan):
        return None
    relation = plan
    while _op(relation) in _ROW_WISE - {"sort"}:
        if _redefines(relation, keys):
            return None
        relation = _input(relation)
    if _op(relation) != "read" or relation.read.WhichOneof("read_type") != "named_table":
        return None
    return relation.read.named_table.unparsed_identifier
