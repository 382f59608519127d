"""What a streaming table reads: landing files, Kafka topics, or an upstream Delta table read as
a stream, a static snapshot or its change data feed. One constructor per kind, keyword options
only."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from lakehouse_assets.lib.errors import DeclarationError

ReadMode = Literal["stream", "static", "change_feed"]
LandingFormat = Literal["text", "csv", "json", "parquet", "avro"]
INFERRED_FORMATS = ("json", "parquet", "avro")
EVOLVING_FORMATS = ("json", "csv", "parquet", "avro")  # CSV: when it is read by header name
# Formats whose files carry their own typed schema: no rescued data column.
SELF_DESCRIBING_FORMATS = ("parquet", "avro")
# Auto Loader's names for what a landed file with fields the schema lacks does to the schema.
SchemaEvolution = Literal["addNewColumns", "rescue", "failOnNewColumns", "none"]
SCHEMA_EVOLUTION_MODES = ("addNewColumns", "rescue", "failOnNewColumns", "none")


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


@dataclass(frozen=True)
class LandingInput:
    """Files producers drop into ``$LAKEHOUSE_ROOT/landing/<source>/``, read as lines, or as CSV,
    JSON, Parquet or Avro rows with an inferred, evolving schema.

    Names starting with ``_`` or ``.`` are in-progress and skipped; ``.gz`` files are decompressed.
    """

    source: str
    format: LandingFormat = "text"
    glob: str = "*"
    options: dict[str, str] = field(default_factory=dict)
    schema: str | None = None
    schema_hints: str | None = None
    schema_evolution: SchemaEvolution | None = None
    # A folder the pipeline's own code names (Auto Loader's load(path)), instead of
    # ``landing/<source>``; no landing sensor watches it.
    path: str | None = None
    # False: inferred top-level columns are strings (Auto Loader's inferColumnTypes=false).
    infer_column_types: bool = True

    @property
    def described(self) -> str:
        """Where the files are read, for messages: ``landing/<source>`` or the code's own path."""
        return self.path or f"landing/{self.source}"

    @property
    def infers_schema(self) -> bool:
        """Read with a schema the engine keeps with the checkpoint (inferred, evolving). CSV with
        ``schema=`` alone is read as Spark reads CSV: by position, with Spark's options."""
        if self.format == "csv":
            return self.schema is None or bool(self.schema_hints or self.schema_evolution)
        return self.format in INFERRED_FORMATS

    @property
    def evolution(self) -> SchemaEvolution:
        """The evolution mode; by default Auto Loader's: ``addNewColumns`` when the schema is
        inferred, ``none`` when it is given."""
        return self.schema_evolution or ("none" if self.schema else "addNewColumns")


@dataclass(frozen=True)
class KafkaInput:
    """Messages of Kafka topics, read from the table's checkpoint like landing files: each run
    reads what arrived since the last one (``availableNow``)."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    starting_offsets: str = "earliest"
    bootstrap_servers: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def described(self) -> str:
        return ", ".join(self.topics) if self.topics else f"topics matching {self.pattern}"


@dataclass(frozen=True)
class CatalogInput:
    """A table of Spark's catalog that no declared table writes (reference data kept elsewhere),
    read by name as a snapshot when the run starts."""

    table: str


Input = TableInput | LandingInput | KafkaInput | CatalogInput


def is_streaming(source: Input) -> bool:
    """Whether the input is read as a stream (landing files, streams, change feeds), not as a
    static snapshot."""
    return not (isinstance(source, CatalogInput) or (isinstance(source, TableInput) and source.mode == "static"))


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


def landing(
    source: str,
    *,
    format: LandingFormat = "text",
    glob: str = "*",
    options: dict[str, str] | None = None,
    schema: str | None = None,
    schema_hints: str | None = None,
    schema_evolution: SchemaEvolution | None = None,
) -> LandingInput:
    """Read the files landed in ``landing/<source>/``.

    :param source: the landing folder's name.
    :param format: ``text`` (one row per line, column ``value``), ``csv`` (with ``schema=``
        alone: by position, as Spark reads CSV; otherwise inferred and evolved like ``json``,
        each file read by its own header's names), or ``json`` (one object
        per line, parsed into columns; the schema is inferred from the files when not given,
        kept with the table's checkpoint and evolved as ``schema_evolution`` says). A ``json``
        input's rows carry ``_rescued_data``: fields the schema lacks and values that do not
        fit their column's type, as a JSON object (a line that is not a JSON object is kept
        whole there under ``_corrupt_record``). ``parquet``: the files' own schema, merged and
        evolved the same way (no ``_rescued_data``: a value Parquet cannot read as its column's
        type fails the run, so ``rescue`` is refused). ``avro``: likewise, from each file's
        writer schema (the ``spark-avro`` jar is fetched at setup).
    :param glob: which file names to read, e.g. ``*.{json,jsonl}``; ``.gz`` variants must match too.
    :param options: Spark reader options (CSV header, encoding, ...).
    :param schema: DDL schema, e.g. ``"id string, kwh double"``: instead of inference, and the
        starting point of evolution (CSV with ``schema=`` alone: read by position).
    :param schema_hints: JSON, CSV, Parquet, Avro: DDL types that override inferred ones, e.g. ``"ts timestamp"``;
        a hinted column absent from the files is added too.
    :param schema_evolution: JSON, CSV, Parquet, Avro: what a file with new fields does. ``addNewColumns`` (default
        when inferring): they become nullable columns of the table in the same run;
        ``rescue``: the schema never changes, they go to ``_rescued_data``;
        ``failOnNewColumns``: the run stops naming the fields and the file, writing nothing,
        until ``schema`` has them; ``none`` (default with ``schema``): they are ignored.
    """
    if format not in ("text", "csv", *INFERRED_FORMATS):
        raise DeclarationError(
            f"landing({source!r}): format must be 'text', 'csv', 'json', 'parquet' or 'avro', not {format!r}"
        )
    if format not in EVOLVING_FORMATS and (schema_hints or schema_evolution):
        raise DeclarationError(
            f"landing({source!r}): schema_hints and schema_evolution apply to format='json', 'csv', 'parquet' or 'avro'"
        )
    if format in SELF_DESCRIBING_FORMATS and schema_evolution == "rescue":
        raise DeclarationError(
            f"landing({source!r}): {format.capitalize()} has no rescued data column; "
            "use addNewColumns, failOnNewColumns or none"
        )
    if schema_evolution is not None and schema_evolution not in SCHEMA_EVOLUTION_MODES:
        raise DeclarationError(
            f"landing({source!r}): schema_evolution must be one of {', '.join(SCHEMA_EVOLUTION_MODES)}, "
            f"not {schema_evolution!r}"
        )
    declared = LandingInput(source, format, glob, dict(options or {}), schema, schema_hints, schema_evolution)
    recursive = any(k.lower() == "recursivefilelookup" and str(v).lower() == "true" for k, v in (options or {}).items())
    if format == "csv" and declared.infers_schema and recursive:
        raise DeclarationError(
            f"landing({source!r}): a CSV input read by header name reads the files of its folder, "
            "not of sub-folders (recursiveFileLookup); give schema= to read them by position"
        )
    for ddl in (schema, schema_hints):
        if ddl and declared.infers_schema:
            ddl_columns(ddl)  # a malformed DDL stops the declaration, not a run
    return declared


def ddl_columns(ddl: str) -> dict[str, str]:
    """``"a string, `b c` decimal(10,2), d struct<x:int,y:int>"`` as ``{name: type}``, in order.

    :param ddl: column definitions separated by top-level commas; names may be back-quoted.
    """
    columns: dict[str, str] = {}
    for part in _top_level(ddl):
        match = re.fullmatch(r"\s*(`(?:[^`]|``)+`|[A-Za-z_][\w]*)\s*:?\s+(.+?)\s*", part, re.S)
        if not match:
            raise DeclarationError(f"schema {ddl!r}: {part.strip()!r} is not 'name type'")
        name = match.group(1)
        if name.startswith("`"):
            name = name[1:-1].replace("``", "`")
        columns[name] = match.group(2)
    if not columns:
        raise DeclarationError(f"schema {ddl!r} names no column")
    return columns


def _top_level(ddl: str) -> list[str]:
    parts, depth, start, quoted = [], 0, 0, False
    for i, char in enumerate(ddl):
        if char == "`":
            quoted = not quoted
        elif not quoted and char in "<(":
            depth += 1
        elif not quoted and char in ">)":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            parts.append(ddl[start:i])
            start = i + 1
    parts.append(ddl[start:])
    return [p for p in parts if p.strip()]


def kafka(
    topic: str | None = None,
    *,
    topics: list[str] | None = None,
    pattern: str | None = None,
    starting_offsets: str = "earliest",
    bootstrap_servers: str | None = None,
    options: dict[str, str] | None = None,
) -> KafkaInput:
    """Read the messages of a Kafka topic as rows shaped like landed lines: ``value`` (the
    message as UTF-8 text), ``_source_file`` (``kafka://<topic>/<partition>/<offset>``),
    ``_ingested_at``, plus ``_kafka_key``, ``_kafka_topic``, ``_kafka_partition``,
    ``_kafka_offset`` and ``_kafka_timestamp``. A function written for a landing input reads it
    unchanged.

    :param topic: the topic (or give ``topics`` or ``pattern``).
    :param topics: several topics.
    :param pattern: a Java regular expression of topic names (``subscribePattern``).
    :param starting_offsets: where a new checkpoint starts: ``earliest`` (default), ``latest``
        or Spark's per-partition JSON.
    :param bootstrap_servers: the brokers (default: ``LAKEHOUSE_KAFKA_BOOTSTRAP``, read at run
        time).
    :param options: Spark Kafka source options; ``kafka.``-prefixed ones go to the consumer
        (``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``...).
    """
    chosen = ([topic] if topic else []) + list(topics or [])
    if bool(chosen) == bool(pattern):
        raise DeclarationError("kafka(): give a topic (or topics=[...]) or a pattern, not both and not neither")
    return KafkaInput(tuple(chosen), pattern, starting_offsets, bootstrap_servers, dict(options or {}))
