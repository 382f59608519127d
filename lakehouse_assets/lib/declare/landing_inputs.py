"""Landing folders as a streaming table's input: files producers drop into a folder, read from the
table's checkpoint, each run reading what landed since the last one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from lakehouse_assets.lib.declare.ddl import ddl_columns, duration
from lakehouse_assets.lib.errors import DeclarationError

LandingFormat = Literal["text", "csv", "json", "parquet", "avro"]
INFERRED_FORMATS = ("json", "parquet", "avro")
EVOLVING_FORMATS = ("json", "csv", "parquet", "avro")  # CSV: when it is read by header name
# Formats whose files carry their own typed schema: no rescued data column.
SELF_DESCRIBING_FORMATS = ("parquet", "avro")
# Auto Loader's names for what a landed file with fields the schema lacks does to the schema.
SchemaEvolution = Literal["addNewColumns", "rescue", "failOnNewColumns", "none"]
SCHEMA_EVOLUTION_MODES = ("addNewColumns", "rescue", "failOnNewColumns", "none")
# What becomes of a landed file once its rows are committed (Auto Loader's cleanSource).
CleanSource = Literal["off", "archive", "delete"]
CLEAN_SOURCE_MODES = ("off", "archive", "delete")


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
    # What one landed file may cost (None: LAKEHOUSE_LANDING_MAX_FILE_BYTES / _LINE_BYTES).
    max_file_bytes: int | None = None
    max_line_bytes: int | None = None
    # Once its rows are committed: kept, archived (kept there for retention) or deleted after it.
    clean_source: CleanSource = "off"
    archive_path: str | None = None
    retention: str | None = None

    kind: ClassVar[str] = "landing"
    streaming: ClassVar[bool] = True
    upstream_table: ClassVar[str | None] = None
    watermark: ClassVar[None] = None

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


def landing(
    source: str,
    *,
    format: LandingFormat = "text",
    glob: str = "*",
    options: dict[str, str] | None = None,
    schema: str | None = None,
    schema_hints: str | None = None,
    schema_evolution: SchemaEvolution | None = None,
    max_file_bytes: int | None = None,
    max_line_bytes: int | None = None,
    clean_source: CleanSource = "off",
    archive_path: str | None = None,
    retention: str | None = None,
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
    :param max_file_bytes: the most a landed file may hold, decompressed (``.gz``, ``.bz2``); a
        larger one is set aside whole (None: ``LAKEHOUSE_LANDING_MAX_FILE_BYTES``, 1 GiB).
    :param max_line_bytes: the longest line a landed ``text``, ``json`` or ``csv`` file may hold
        (the reader holds a line whole); a file with a longer one is set aside whole (None:
        ``LAKEHOUSE_LANDING_MAX_LINE_BYTES``, 16 MiB).
    :param clean_source: what becomes of a landed file once its rows are committed (Auto
        Loader's ``cleanSource``): ``off`` (kept, the default), ``archive`` (moved at the next
        run into ``archive_path``, dated ``YYYY/MM/DD``, kept there for ``retention``) or
        ``delete`` (deleted ``retention`` after its commit). A folder read by more than one table
        cannot be cleaned. Files set aside are never cleaned.
    :param archive_path: where ``archive`` moves files (default ``archive/<source>`` under the
        data root); a folder or bucket prefix that no landing input reads.
    :param retention: ``archive``: how long archived files are kept (None: forever); ``delete``:
        how long a committed file stays before it is deleted (default ``"7 days"``). A duration
        such as ``"30 days"``, ``"12 hours"``, ``"1 week"``.
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
    for bound, value in (("max_file_bytes", max_file_bytes), ("max_line_bytes", max_line_bytes)):
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise DeclarationError(f"landing({source!r}): {bound} must be a positive number of bytes, not {value!r}")
    if clean_source not in CLEAN_SOURCE_MODES:
        raise DeclarationError(
            f"landing({source!r}): clean_source must be 'off', 'archive' or 'delete', not {clean_source!r}"
        )
    if archive_path and clean_source != "archive":
        raise DeclarationError(f"landing({source!r}): archive_path needs clean_source='archive'")
    if retention is not None:
        if clean_source == "off":
            raise DeclarationError(f"landing({source!r}): retention needs clean_source='archive' or 'delete'")
        duration(retention)  # a malformed duration stops the declaration, not a run
    declared = LandingInput(
        source,
        format,
        glob,
        dict(options or {}),
        schema,
        schema_hints,
        schema_evolution,
        max_file_bytes=max_file_bytes,
        max_line_bytes=max_line_bytes,
        clean_source=clean_source,
        archive_path=archive_path.rstrip("/") if archive_path else None,
        retention=retention or ("7 days" if clean_source == "delete" else None),
    )
    recursive = any(k.lower() == "recursivefilelookup" and str(v).lower() == "true" for k, v in (options or {}).items())
    if recursive and clean_source != "off":
        raise DeclarationError(
            f"landing({source!r}): clean_source cleans the files directly in the landing folder; with "
            "recursiveFileLookup those of its sub-folders would be read and never cleaned"
        )
    if format == "csv" and declared.infers_schema and recursive:
        raise DeclarationError(
            f"landing({source!r}): a CSV input read by header name reads the files of its folder, "
            "not of sub-folders (recursiveFileLookup); give schema= to read them by position"
        )
    for ddl in (schema, schema_hints):
        if ddl and declared.infers_schema:
            ddl_columns(ddl)  # a malformed DDL stops the declaration, not a run
    return declared
