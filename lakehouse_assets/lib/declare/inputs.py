"""What a streaming table reads: landing files, Kafka topics, or an upstream Delta table read as
a stream, a static snapshot or its change data feed. One constructor per kind, keyword options
only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal, TypeVar

from lakehouse_assets.lib.declare.kafka_inputs import KafkaInput
from lakehouse_assets.lib.declare.landing_inputs import (  # noqa: F401 (the inputs' names, in one place)
    CLEAN_SOURCE_MODES,
    EVOLVING_FORMATS,
    INFERRED_FORMATS,
    SCHEMA_EVOLUTION_MODES,
    SELF_DESCRIBING_FORMATS,
    CleanSource,
    LandingFormat,
    LandingInput,
    SchemaEvolution,
    landing,
)

ReadMode = Literal["stream", "static", "change_feed"]


@dataclass(frozen=True)
class Watermark:
    """An event-time column and how late its rows may arrive; ``lateness`` None means the
    configured allowed lateness (``LAKEHOUSE_ALLOWED_LATENESS``, 1 hour), read when a run starts."""

    column: str
    lateness: str | None = None


@dataclass(frozen=True)
class TableInput:
    """An upstream Delta table read as a stream, a static snapshot, or its change data feed."""

    table: str
    mode: ReadMode = "stream"
    options: dict[str, str] = field(default_factory=dict)
    # For static reads: the DDL schema of an empty frame used while the table does not exist yet.
    schema_if_missing: str | None = None
    watermark: Watermark | None = None

    kind: ClassVar[str] = "table"

    @property
    def streaming(self) -> bool:
        return self.mode != "static"

    @property
    def upstream_table(self) -> str | None:
        """The declared table read (every input kind answers: None when it reads no such table)."""
        return self.table


@dataclass(frozen=True)
class CatalogInput:
    """A table of Spark's catalog that no declared table writes (reference data kept elsewhere),
    read by name as a snapshot when the run starts."""

    table: str

    kind: ClassVar[str] = "catalog"
    streaming: ClassVar[bool] = False
    upstream_table: ClassVar[str | None] = None
    watermark: ClassVar[Watermark | None] = None


Input = TableInput | LandingInput | KafkaInput | CatalogInput


def is_streaming(source: Input) -> bool:
    """Whether the input is read as a stream (landing files, streams, change feeds), not as a
    static snapshot."""
    return source.streaming


Kind = TypeVar("Kind", TableInput, LandingInput, KafkaInput, CatalogInput)


def inputs_of_kind(inputs: Mapping[str, Input], kind: type[Kind]) -> dict[str, Kind]:
    """The inputs of one kind, by parameter: the one place a declaration's inputs are told apart
    by their type (what the engine does with each kind is its registered reader's business).

    :param inputs: a table's inputs by parameter.
    :param kind: the input class wanted.
    """
    return {parameter: source for parameter, source in inputs.items() if isinstance(source, kind)}


def of_kind(inputs: Iterable[Input], kind: type[Kind]) -> list[Kind]:
    """The inputs of one kind, in order (see :func:`inputs_of_kind`).

    :param inputs: inputs.
    :param kind: the input class wanted.
    """
    return [source for source in inputs if isinstance(source, kind)]


def stream(
    table: str,
    *,
    watermark: str | None = None,
    lateness: str | None = None,
    options: dict[str, str] | None = None,
) -> TableInput:
    """Read the Delta table ``table`` as a stream of its appended rows.

    :param table: the upstream table's name.
    :param watermark: the event-time column that bounds the state of stateful queries
        (windows, sessions, joins, deduplication); None for stateless reads.
    :param lateness: how late rows may arrive behind the latest event time seen (a Spark
        interval); None: the configured allowed lateness, read at run time.
    :param options: Delta streaming reader options, e.g. ``{"skipChangeCommits": "true"}``.
    """
    mark = Watermark(watermark, lateness) if watermark else None
    return TableInput(table, "stream", dict(options or {}), watermark=mark)


def static(table: str, *, schema_if_missing: str | None = None) -> TableInput:
    """Read the Delta table ``table`` as a snapshot at the start of each micro-batch (a lookup).

    :param table: the upstream table's name.
    :param schema_if_missing: DDL schema of an empty frame used while the table does not exist.
    """
    return TableInput(table, "static", schema_if_missing=schema_if_missing)


def catalog_table(name: str) -> CatalogInput:
    """Read the table ``name`` of Spark's catalog (not a table declared here) as a snapshot when
    the run starts. A materialized view reading one is recomputed on every run: its changes
    are not tracked.

    :param name: the table's name in the catalog (``db.table`` or ``table``).
    """
    return CatalogInput(name)


def change_feed(table: str, *, options: dict[str, str] | None = None) -> TableInput:
    """Read the change data feed of the Delta table ``table`` (inserts, updates, deletes).

    :param table: the upstream table's name (its change data feed is on: every framework table).
    :param options: Delta reader options.
    """
    return TableInput(table, "change_feed", dict(options or {}))
