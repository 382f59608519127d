"""The schema of a ``landing(format="json" | "csv" | "parquet" | "avro")`` input: inferred from the first files, kept with the
table's checkpoint, versioned, and evolved as the input's mode says when later files bring new
fields (Auto Loader's ``addNewColumns``, ``rescue``, ``failOnNewColumns``, ``none``).

Under ``<checkpoint>/_schemas/<parameter>/``: ``<n>.json``, one file per schema version (the
columns in order, with what was added and from which file). The files to compare with the schema
are those the intake admitted since the last comparison (its ledger's ``unexamined``), so the
work is bounded by what is new, not by the folder's history. A new version is written before the run's
query starts, so a run killed anywhere leaves a schema its retry reads the same way.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DoubleType, LongType, StructField, StructType

from lakehouse_assets.lib.declare.inputs import LandingInput, ddl_columns
from lakehouse_assets.lib.declare.parsing import CORRUPT_RECORD
from lakehouse_assets.lib.declare.sql_names import column
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine import faults, storage
from lakehouse_assets.lib.engine.csv_layout import infer_types, read_header, record_headers
from lakehouse_assets.lib.engine.delta_sql import sql_type
from lakehouse_assets.lib.engine.errors import engine_lost
from lakehouse_assets.lib.engine.intake.admission import intake_folder, limits_for
from lakehouse_assets.lib.engine.intake.bounds import LINE_MAX_OPTION, Limits
from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger
from lakehouse_assets.lib.engine.intake.width import beyond_width, leaf_count, set_aside_files
from lakehouse_assets.lib.engine.landing_names import NO_GLOB, landing_folder
from lakehouse_assets.lib.errors import LakehouseError, first_line
from lakehouse_assets.lib.settings import LakehousePaths, current

Log = Callable[[str], None]
# The modes under which landed files' new fields are looked for: to add them, or to refuse them.
LOOKS_FOR_NEW_FIELDS = ("addNewColumns", "failOnNewColumns")


@dataclass(frozen=True)
class SchemaVersion:
    """One version of an input's schema: its columns (name -> Spark SQL type) in order."""

    version: int
    columns: dict[str, str]


def schema_folder(paths: LakehousePaths, table: TableSpec, parameter: str) -> str:
    # A parameter may be a path (an Auto Loader source of a pipeline): a safe name, still unique.
    safe = re.sub(r"[^A-Za-z0-9_]", "_", parameter)
    if safe != parameter:
        safe += "-" + hashlib.sha1(parameter.encode()).hexdigest()[:8]
    return f"{paths.checkpoint(table.checkpoint_name)}/_schemas/{safe}"


def stored_schema(paths: LakehousePaths, table: TableSpec, parameter: str) -> SchemaVersion | None:
    """The input's latest recorded schema, or None before its first run."""
    folder = schema_folder(paths, table, parameter)
    versions = [int(n[: -len(".json")]) for n in storage.list_names(folder) if n[: -len(".json")].isdigit()]
    if not versions:
        return None
    latest = max(versions)
    record = json.loads(storage.read_text(f"{folder}/{latest}.json") or "{}")
    return SchemaVersion(latest, dict(record["columns"]))


def _files(spark: SparkSession, files: list[str], file_format: str, max_line_bytes: int) -> DataFrame:
    reader = spark.read.option(NO_GLOB, "false")
    if file_format == "parquet":
        return reader.option("mergeSchema", "true").parquet(*files)
    if file_format == "avro":
        return reader.format("avro").schema(_merged_avro_schema(spark, files)).load(files)
    return reader.option("mode", "PERMISSIVE").option(LINE_MAX_OPTION, str(max_line_bytes)).json(files)


def _merged_avro_schema(spark: SparkSession, files: list[str]) -> StructType:
    """The union of the files' writer schemas, in order of first appearance: Spark reads a set
    of Avro files with one file's schema (it has no ``mergeSchema``), so each file is asked. A
    field typed differently in two files takes the wider numeric type Spark's reader widens to,
    else the run stops naming both files."""
    merged: dict[str, tuple[StructField, str]] = {}  # lower-case name -> (field, first file)
    for file in files:
        try:
            fields = spark.read.option(NO_GLOB, "false").format("avro").load(file).schema.fields
        except Exception as error:
            if engine_lost(error, current().spark_remote):
                raise
            reason = first_line(error)[:300]
            raise LakehouseError(f"{file} is not a readable Avro file ({reason}): remove or replace it") from error
        for found in fields:
            known = merged.get(found.name.lower())
            if known is None:
                merged[found.name.lower()] = (StructField(found.name, found.dataType, True), file)
            elif known[0].dataType != found.dataType:
                wider = _WIDER.get(frozenset((known[0].dataType.simpleString(), found.dataType.simpleString())))
                if wider is None:
                    raise LakehouseError(
                        f"{file} has field {found.name} {found.dataType.simpleString()} where {known[1]} has "
                        f"{known[0].dataType.simpleString()}: the Avro files of one input must agree on its type"
                    )
                merged[found.name.lower()] = (StructField(known[0].name, wider, True), known[1])
    return StructType([field for field, _ in merged.values()])


# Type pairs Spark's Avro reader widens (an int field read as long or double, a float as double).
_WIDER: dict[frozenset[str], DataType] = {
    frozenset(("int", "bigint")): LongType(),
    frozenset(("int", "double")): DoubleType(),
    frozenset(("float", "double")): DoubleType(),
}


def infer_columns(frame: DataFrame) -> dict[str, str]:
    """The columns Spark found in the files of ``frame`` (JSON inference, Parquet's merged
    footers, the union of Avro writer schemas): name -> type, in order."""
    return {f.name: sql_type(f.dataType) for f in frame.schema.fields if f.name != CORRUPT_RECORD}


def first_files(frame: DataFrame | None, files: list[str], columns: list[str]) -> dict[str, str]:
    """For each of ``columns``, the first of ``files`` (``frame`` reads them) holding a value of it."""
    if frame is None or not columns:
        return {}
    path = F.col("_metadata.file_path")
    found = frame.select(
        *[F.min(F.when(column(c).isNotNull(), path)).alias(f"c{i}") for i, c in enumerate(columns)]
    ).first()
    return {c: str((found[f"c{i}"] if found else None) or files[0]).rsplit("/", 1)[-1] for i, c in enumerate(columns)}


def _within_width(
    spark: SparkSession,
    landed: str,
    file_format: str,
    files: list[str],
    known: dict[str, str] | None,
    together: StructType,
    set_aside_width: tuple[IntakeLedger, Limits, Log],
) -> list[str]:
    """``files`` but those that would take the schema past the column bound (set aside), given
    ``together``, the schema inferred over them all: each file is inferred alone only when
    together they are too wide."""
    ledger, limits, log = set_aside_width
    if sum(leaf_count(f.dataType) for f in together.fields) + len(known or {}) <= limits.max_columns:
        return files

    def columns_of(name: str) -> dict[str, int]:
        schema = _files(spark, [f"{landed}/{name}"], file_format, limits.max_line_bytes).schema
        return {f.name: leaf_count(f.dataType) for f in schema.fields if f.name != CORRUPT_RECORD}

    wide = beyond_width(files, columns_of, list(known or {}), limits.max_columns)
    set_aside_files(landed, ledger, wide, log)
    return [n for n in files if n not in wide]


def _new(columns: dict[str, str], known: dict[str, str]) -> dict[str, str]:
    """Columns of ``columns`` that ``known`` lacks (case-insensitively, as Spark resolves them)."""
    lower = {k.lower() for k in known}
    return {c: t for c, t in columns.items() if c.lower() not in lower}


def _csv_fields(
    spark: SparkSession,
    paths: LakehousePaths,
    source: LandingInput,
    folder: str,
    files: list[str],
    known: dict[str, str] | None,
    set_aside_width: tuple[IntakeLedger, Limits, Log],
) -> tuple[dict[str, str], Callable[[list[str]], dict[str, str]]]:
    """The columns the headers of the CSV ``files`` name (typed by Spark's inference where the
    schema may take them, else string), and which file names each first; the headers are kept.
    A file whose header would take the schema past the column bound is set aside."""
    ledger, limits, log = set_aside_width
    landed = landing_folder(paths, source)
    headers = {n: read_header(f"{landed}/{n}", source.options, list(known or {})) for n in files}
    wide = beyond_width(sorted(headers), lambda n: dict.fromkeys(headers[n], 1), list(known or {}), limits.max_columns)
    set_aside_files(landed, ledger, wide, log)
    headers = {n: h for n, h in headers.items() if n not in wide}
    first_spelling: dict[str, str] = {}  # Spark and Delta resolve names case-insensitively
    for name in (c for n in sorted(headers) for c in headers[n]):
        first_spelling.setdefault(name.lower(), name)
    names = list(first_spelling.values())
    wanted = set(names) if known is None else set(_new(dict.fromkeys(names, ""), known))
    typed = {}
    if wanted and source.infer_column_types and (known is None or source.evolution in LOOKS_FOR_NEW_FIELDS):
        typed = infer_types(spark, {n: h for n, h in headers.items() if wanted & set(h)}, landed, source.options)
    record_headers(folder, headers)

    def first_in(columns: list[str]) -> dict[str, str]:
        return {c: next(n for n in sorted(headers) if c in headers[n]) for c in columns if c in names}

    return {c: typed.get(c, "string") for c in names}, first_in


def evolve_schema(
    spark: SparkSession,
    paths: LakehousePaths,
    table: TableSpec,
    parameter: str,
    source: LandingInput,
    log: Log,
    warn: Log | None = None,
) -> list[str]:
    """Bring the input's recorded schema up to the files landed so far, as its mode allows; a
    sentence per change (to ``log``); a file that would make it too wide is set aside (said to
    ``warn``, default ``log``). Raises :class:`LakehouseError` when ``failOnNewColumns`` meets a
    new field.
    """
    folder = schema_folder(paths, table, parameter)
    where = source.described
    current = stored_schema(paths, table, parameter)
    hints = ddl_columns(source.schema_hints) if source.schema_hints else {}
    declared = ddl_columns(source.schema) if source.schema else {}
    version, known = (current.version, dict(current.columns)) if current else (-1, None)
    changes: list[str] = []

    def record(columns: dict[str, str], added: dict[str, str], files: dict[str, str]) -> None:
        nonlocal version
        version += 1
        storage.write_text(
            f"{folder}/{version}.json",
            json.dumps({"columns": list(columns.items()), "added": added, "first_files": files}, indent=1),
        )

    if known is None and declared:
        known = declared
        record(known, {}, {})
    missing = _new(declared, known or {})  # columns the user has since added to schema=
    if missing and known is not None:
        known = {**known, **missing}
        record(known, missing, {})
        changes += [f"added column {c} {t} (now in schema=)" for c, t in missing.items()]
    if known is None or source.evolution in LOOKS_FOR_NEW_FIELDS or source.format == "csv":
        ledger = IntakeLedger(intake_folder(paths, table, parameter))
        intake = ledger.load()
        landing = landing_folder(paths, source)  # the files admitted since the last comparison
        files = [n for n in sorted(intake.unexamined) if storage.exists(f"{landing}/{n}")]
        limits = limits_for(source)
        aside = (ledger, limits, warn or log)
        if source.format == "csv":
            found, first_in = _csv_fields(spark, paths, source, folder, files, known, aside)
        else:
            landed = [f"{landing_folder(paths, source)}/{n}" for n in files]
            frame = _files(spark, landed, source.format, limits.max_line_bytes) if files else None  # one job
            if frame is not None:
                kept = _within_width(
                    spark, landing_folder(paths, source), source.format, files, known, frame.schema, aside
                )
                if kept != files:
                    files, landed = kept, [f"{landing_folder(paths, source)}/{n}" for n in kept]
                    frame = _files(spark, landed, source.format, limits.max_line_bytes) if files else None
            found = infer_columns(frame) if frame is not None else {}
            first_in = lambda columns: first_files(frame, landed, columns)  # noqa: E731
        if not source.infer_column_types:
            found = {c: t if t.startswith(("struct<", "array<")) else "string" for c, t in found.items()}
        inferred = {c: hints.get(c, t) for c, t in found.items()}
        if known is None:
            known = {**inferred, **_new(hints, inferred)}
            if not known:
                raise LakehouseError(
                    f"{table.name}: {where} holds no field to infer a schema from; "
                    "land a file or give landing(..., schema=...)"
                )
            record(known, {}, first_in(list(inferred)))
            changes.append(f"inferred the schema of {where}: " + ", ".join(f"{c} {t}" for c, t in known.items()))
        new = _new(inferred, known) if source.evolution in LOOKS_FOR_NEW_FIELDS else {}
        found_in = first_in(list(new))
        if new and source.evolution == "failOnNewColumns":
            raise LakehouseError(
                f"{table.name}: {', '.join(sorted({found_in[c] for c in new}))} in {where} "
                f"brings new field(s) {', '.join(new)}, which schema_evolution='failOnNewColumns' refuses; "
                "nothing was written. Add them to landing(..., schema=...) or change schema_evolution, then run again."
            )
        if new and source.evolution == "addNewColumns":
            known = {**known, **new}
            record(known, new, found_in)
            faults.reached(table.name, "after_schema_evolved")
            changes += [f"added column {c} {t} (first in {found_in[c]})" for c, t in new.items()]
        intake.unexamined = []
        ledger.save(intake)
    for change in changes:
        log(f"{table.name}: {change}")
    return changes
