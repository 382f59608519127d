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
    wanted = set(names) if known is None else set(_new(dict.fromkeys(names, ""), known))
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
            frame, landed = _inferred(spark, landing, source.format, files, known, aside)
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
        _examined(ledger)
    else:  # a schema that never changes: nothing to look for in the admitted files
        _examined(IntakeLedger(intake_folder(paths, table, parameter)))
    for change in changes:
        log(f"{table.name}: {change}")
    return changes


def _examined(ledger: IntakeLedger) -> None:
    """The files the intake admitted have been compared with the schema."""
    state = ledger.load()
    if state.unexamined:
        state.unexamined = []
        ledger.save(state)
