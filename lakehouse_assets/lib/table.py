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
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from pyspark.sql import DataFrame

from lakehouse_assets.lib.checks import TableCheck, quarantine_rate, schema_unchanged
from lakehouse_assets.lib.expectations import Expectation
from lakehouse_assets.lib.sinks import AppendSink, Sink

ReadMode = Literal["stream", "static", "change_feed"]


@dataclass(frozen=True)
class TableInput:
    """An upstream Delta table read as a stream, a static snapshot, or its change data feed."""

    table: str
    mode: ReadMode = "stream"
    options: dict[str, str] = field(default_factory=dict)
    # For static reads: the DDL schema of an empty frame used while the table does not exist yet.
    schema_if_missing: str | None = None
    # (event-time column, allowed lateness) for stateful streaming queries.
    watermark: tuple[str, str] | None = None


@dataclass(frozen=True)
class LandingInput:
    """Files producers drop into ``$LAKEHOUSE_ROOT/landing/<source>/``, read as lines or CSV.

    Names starting with ``_`` or ``.`` are in-progress and skipped; ``.gz`` files are decompressed.
    """

    source: str
    format: Literal["text", "csv"] = "text"
    glob: str = "*"
    options: dict[str, str] = field(default_factory=dict)
    schema: str | None = None


def stream(table: str, watermark: tuple[str, str] | None = None, **options: str) -> TableInput:
    """Read ``table`` as a stream; ``watermark=(event_time_column, allowed_lateness)`` bounds
    the state of stateful queries (windows, sessions, joins, deduplication)."""
    return TableInput(table, "stream", options, watermark=watermark)


def static(table: str, schema_if_missing: str | None = None) -> TableInput:
    return TableInput(table, "static", schema_if_missing=schema_if_missing)


def change_feed(table: str, **options: str) -> TableInput:
    return TableInput(table, "change_feed", options)


def landing(source: str, **kwargs: Any) -> LandingInput:
    return LandingInput(source, **kwargs)


Input = TableInput | LandingInput


@dataclass(frozen=True)
class Quarantine:
    """Where rows failing ``quarantine`` expectations go: ``columns`` of the transform's output
    (None: the table's columns) plus, with ``with_failures``, the names they failed."""

    table: str
    columns: list[str] | None = None
    with_failures: bool = True
    # The share of a run's rows quarantined above which the quarantine_rate check warns.
    max_share: float = 0.1


@dataclass(frozen=True)
class StreamingTable:
    """A declared streaming table; :func:`streaming_table` builds it from a function."""

    name: str
    transform: Callable[..., DataFrame]
    group: str
    inputs: dict[str, Input]
    sink: Sink = field(default_factory=AppendSink)
    expectations: list[Expectation] = field(default_factory=list)
    quarantine: Quarantine | None = None
    columns: list[str] | None = None
    publish: Callable[[DataFrame], DataFrame] | None = None
    partition_by: list[str] = field(default_factory=list)
    table_properties: dict[str, str] = field(default_factory=dict)
    output_mode: Literal["append", "update", "complete"] = "append"
    description: str | None = None
    owners: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    freshness: timedelta | None = None
    checks: list[TableCheck] = field(default_factory=list)
    # Among steps of one run that are ready together, higher runs first (Dagster's step priority).
    priority: int = 0

    @property
    def upstream_tables(self) -> list[str]:
        return [i.table for i in self.inputs.values() if isinstance(i, TableInput)]

    @property
    def landing_sources(self) -> list[str]:
        return [i.source for i in self.inputs.values() if isinstance(i, LandingInput)]

    @property
    def outputs(self) -> list[str]:
        return [self.name] + ([self.quarantine.table] if self.quarantine else [])

    @property
    def all_checks(self) -> list[TableCheck]:
        """Declared checks plus those every table gets: schema and, with a quarantine, its rate."""
        defaults = [schema_unchanged()]
        if self.quarantine:
            defaults.append(quarantine_rate(self.quarantine.max_share))
        declared = {c.name for c in self.checks}
        return self.checks + [c for c in defaults if c.name not in declared]

    @property
    def is_stateful(self) -> bool:
        return any(isinstance(i, TableInput) and i.watermark for i in self.inputs.values())


def streaming_table(
    *,
    group: str,
    inputs: dict[str, Input] | None = None,
    name: str | None = None,
    **options: Any,
) -> Callable[[Callable[..., DataFrame]], StreamingTable]:
    """Declare a streaming Delta table from a pure function of its input DataFrames."""

    def decorate(fn: Callable[..., DataFrame]) -> StreamingTable:
        declared = dict(inputs or {})
        for param in inspect.signature(fn).parameters:
            declared.setdefault(param, stream(param))
        unknown = set(declared) - set(inspect.signature(fn).parameters)
        if unknown:
            raise TypeError(f"{fn.__name__}: inputs {sorted(unknown)} are not parameters")
        description = options.pop("description", None) or inspect.getdoc(fn)
        return StreamingTable(
            name=name or fn.__name__,
            transform=fn,
            group=group,
            inputs=declared,
            description=description,
            **options,
        )

    return decorate
