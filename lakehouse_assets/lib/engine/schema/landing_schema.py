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

from lakehouse_assets.lib.declare.ddl import ddl_columns
from lakehouse_assets.lib.declare.inputs import LandingInput
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.intake.admission import intake_folder, limits_for
from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger
from lakehouse_assets.lib.engine.intake.width import beyond_width, set_aside_files
from lakehouse_assets.lib.engine.reading.landing_names import landing_folder
from lakehouse_assets.lib.engine.schema.csv_layout import infer_types, read_header, record_headers
from lakehouse_assets.lib.engine.schema.evolution import (
    LOOKS_FOR_NEW_FIELDS,
    FirstIn,
    SchemaStep,
    declared_steps,
    last_columns,
    new_columns,
    next_schema,
    typed,
)
from lakehouse_assets.lib.engine.schema.landing_inference import (
    SetAsideTo,
    first_files,
    infer_columns,
    read_files,
    within_width,
)
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.errors import LakehouseError, LandedFileUnreadable
from lakehouse_assets.lib.paths import LakehousePaths

Log = Callable[[str], None]


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


def _inferred(
    spark: SparkSession,
    landing: str,
    file_format: str,
    files: list[str],
    known: dict[str, str] | None,
    aside: SetAsideTo,
) -> tuple[DataFrame | None, list[str]]:
    """The frame inferring the schema of ``files`` (names in ``landing``), without those that
    cannot be read or would make the schema too wide (set aside); and the paths it reads."""
    frame, landed = read_files(spark, [f"{landing}/{n}" for n in files], file_format, landing, aside)
    if frame is None:
        return None, []
    names = [p.rsplit("/", 1)[-1] for p in landed]
    kept = within_width(spark, landing, file_format, names, known, frame.schema, aside)
    if kept == names:
        return frame, landed
    return read_files(spark, [f"{landing}/{n}" for n in kept], file_format, landing, aside) if kept else (None, [])


def _csv_fields(
    spark: SparkSession,
    paths: LakehousePaths,
    source: LandingInput,
    folder: str,
    files: list[str],
    known: dict[str, str] | None,
    set_aside_width: SetAsideTo,
) -> tuple[dict[str, str], Callable[[list[str]], dict[str, str]]]:
    """The columns the headers of the CSV ``files`` name (typed by Spark's inference where the
    schema may take them, else string), and which file names each first; the headers are kept.
    A file whose header would take the schema past the column bound is set aside."""
    ledger, limits, log = set_aside_width
    landed = landing_folder(paths, source)
    headers, unreadable = {}, {}
    for n in files:
        try:
            headers[n] = read_header(f"{landed}/{n}", source.options, list(known or {}))
        except LakehouseError as error:
            unreadable[n] = str(error)
    wide = beyond_width(sorted(headers), lambda n: dict.fromkeys(headers[n], 1), list(known or {}), limits.max_columns)
    set_aside_files(landed, ledger, unreadable | wide, log)
    headers = {n: h for n, h in headers.items() if n not in wide}
    first_spelling: dict[str, str] = {}  # Spark and Delta resolve names case-insensitively
    for name in (c for n in sorted(headers) for c in headers[n]):
        first_spelling.setdefault(name.lower(), name)
    names = list(first_spelling.values())
    wanted = set(names) if known is None else set(new_columns(dict.fromkeys(names, ""), known))
    typed = {}
    if wanted and source.infer_column_types and (known is None or source.evolution in LOOKS_FOR_NEW_FIELDS):
        while True:
            try:
                typed = infer_types(
                    spark, {n: h for n, h in headers.items() if wanted & set(h)}, landed, source.options
                )
                break
            except LandedFileUnreadable as error:  # the others are inferred again without it
                name = error.file.rstrip("/").rsplit("/", 1)[-1]
                if name not in headers:
                    raise
                set_aside_files(landed, ledger, {name: f"inferring its types failed ({error})"}, log)
                headers.pop(name)
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
    """Bring the input's recorded schema up to the files landed so far, as its mode allows
    (:func:`~lakehouse_assets.lib.engine.schema.evolution.next_schema` decides; this reads the
    new files' fields and records the versions); a sentence per change (to ``log``); a file that
    would make it too wide is set aside (said to ``warn``, default ``log``). Raises
    :class:`LakehouseError` when ``failOnNewColumns`` meets a new field.
    """
    folder = schema_folder(paths, table, parameter)
    current = stored_schema(paths, table, parameter)
    hints = ddl_columns(source.schema_hints) if source.schema_hints else {}
    declared = ddl_columns(source.schema) if source.schema else {}
    version, known = (current.version, dict(current.columns)) if current else (-1, None)
    steps = declared_steps(known, declared)
    version = _record(folder, version, steps)
    known = last_columns(known, steps)
    ledger = IntakeLedger(intake_folder(paths, table, parameter))
    if known is None or source.evolution in LOOKS_FOR_NEW_FIELDS or source.format == "csv":
        found, first_in = _fields_of_new_files(spark, paths, source, folder, ledger, known, warn or log)
        found = typed(found, hints, source.infer_column_types)
        evolved = next_schema(known, hints, found, source.evolution, first_in, table=table.name, where=source.described)
        for step in evolved:
            version = _record(folder, version, [step])
            if step.added:
                faults.reached(table.name, "after_schema_evolved")
        steps += evolved
    _examined(ledger)  # a schema that never changes has nothing to look for in the admitted files
    changes = [sentence for step in steps for sentence in step.says]
    for change in changes:
        log(f"{table.name}: {change}")
    return changes


def _record(folder: str, version: int, steps: list[SchemaStep]) -> int:
    """Write each step as the next version; the last version written."""
    for step in steps:
        version += 1
        document = {"columns": list(step.columns.items()), "added": step.added, "first_files": step.first_files}
        storage.write_text(f"{folder}/{version}.json", json.dumps(document, indent=1))
    return version


def _fields_of_new_files(
    spark: SparkSession,
    paths: LakehousePaths,
    source: LandingInput,
    folder: str,
    ledger: IntakeLedger,
    known: dict[str, str] | None,
    warn: Log,
) -> tuple[dict[str, str], FirstIn]:
    """The fields the files admitted since the last comparison hold, and where each was first found."""
    landing = landing_folder(paths, source)
    files = [n for n in sorted(ledger.load().unexamined) if storage.exists(f"{landing}/{n}")]
    aside = (ledger, limits_for(source), warn)
    if source.format == "csv":
        return _csv_fields(spark, paths, source, folder, files, known, aside)
    frame, landed = _inferred(spark, landing, source.format, files, known, aside)
    found = infer_columns(frame) if frame is not None else {}
    return found, lambda columns: first_files(frame, landed, columns)


def _examined(ledger: IntakeLedger) -> None:
    """The files the intake admitted have been compared with the schema."""
    state = ledger.load()
    if state.unexamined:
        state.unexamined = []
        ledger.save(state)
