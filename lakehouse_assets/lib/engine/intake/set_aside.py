"""Setting a landed file aside, and taking it back in.

A file that cannot be taken in is moved, whole, into its landing folder's ``_set_aside/``
(a name Spark and the sensors never read) and recorded first (:mod:`.ledger`), so a run killed
at any instant finishes the move at its next start; one row in the table's quarantine names
it, its size and the reason (never its content), written once under Delta's transaction id for
set-aside rows. Taking it back in moves it into the landing folder again under a new name (Spark
never reads a name it planned twice, and the intake's cursor remembers names it has vetted)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.intake.entries import SET_ASIDE_FOLDER
from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger, SetAside
from lakehouse_assets.lib.engine.reading.landing_names import expand_globs, matches
from lakehouse_assets.lib.engine.state import delta_sql, storage
from lakehouse_assets.lib.engine.writing.writes import BatchWrite, append_batch
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths

Log = Callable[[str], None]
REASON = "_set_aside_reason"
SIZE = "_set_aside_bytes"
SET_ASIDE_COLUMNS = StructType([StructField(REASON, StringType()), StructField(SIZE, LongType())])


def lines_of_files(rows: DataFrame) -> DataFrame:
    """``rows`` without the rows naming a file set aside whole (its lines were never read)."""
    return rows.where(F.col(REASON).isNull()) if REASON in rows.columns else rows


def landed_uri(folder: str, name: str) -> str:
    """The file's path as the table's ``_source_file`` holds it (a ``file:`` URI when local)."""
    path = f"{folder.rstrip('/')}/{name}"
    return path if "://" in path or path.startswith("file:") else "file:" + path


def finish_moves(folder: str, ledger: IntakeLedger) -> None:
    """Complete the moves a killed run recorded but may not have made."""
    records = ledger.records()
    pending = [r for r in records if r.state == "moving"]
    for record in pending:
        if storage.exists(f"{folder}/{record.name}") or _is_link(f"{folder}/{record.name}"):
            try:
                storage.move(f"{folder}/{record.name}", f"{folder}/{SET_ASIDE_FOLDER}/{record.stored_as}")
            except PermissionError:
                raise LakehouseError(
                    f"cannot set aside landed file {record.name} ({record.reason}): {folder} is not writable by "
                    "this user; let the runs write it, or remove the file"
                ) from None
        record.state = "moved"
    if pending:
        ledger.save_records(records)


def _is_link(path: str) -> bool:
    if "://" in path and not path.startswith("file:"):
        return False  # object storage has no links
    return Path(path.removeprefix("file://").removeprefix("file:")).is_symlink()


def set_aside(
    folder: str, ledger: IntakeLedger, name: str, size: int, reason: str, planned: bool, log: Log, table: str = ""
) -> SetAside:
    """Move ``folder/name`` into ``folder/_set_aside/`` and record why; one warning line to ``log``.

    :param table: the table (or flow) whose input this is, for its fault points.
    """
    taken = set(storage.list_names(f"{folder}/{SET_ASIDE_FOLDER}"))
    record = ledger.add(name, size, reason, planned, taken)
    faults.reached(table, "after_set_aside_recorded")
    finish_moves(folder, ledger)
    faults.reached(table, "after_set_aside_moved")
    log(
        f"{table + ': ' if table else ''}set aside landed file {name} ({size} bytes): {reason}; it is in "
        f"{SET_ASIDE_FOLDER}/{record.stored_as} and the rest of the folder flows (once fixed: python -m "
        f"lakehouse_assets.set_aside retake{' ' + table if table else ''})"
    )
    return record


def record_in_quarantine(
    spark: SparkSession, paths: LakehousePaths, flow: TableSpec, folder: str, ledger: IntakeLedger, app_id: str
) -> None:
    """Write one quarantine row per moved file not yet recorded (each under its own Delta
    transaction version, so a retry writes none twice). A table without a quarantine only
    records them; one whose quarantine does not exist yet writes them after its first query."""
    records = ledger.records()
    pending = [r for r in records if r.state == "moved"]
    if not pending:
        return
    if flow.quarantine is not None:
        path = paths.table(flow.quarantine.table)
        if not delta_sql.is_delta_table(path):
            return
        delta_sql.add_missing_columns(spark, path, SET_ASIDE_COLUMNS)
        schema = spark.read.format("delta").load(path).schema
        for record in sorted(pending, key=lambda r: r.seq):
            row: dict[str, object] = {f.name: None for f in schema.fields}
            row |= {REASON: record.reason, SIZE: record.size}
            if "_source_file" in row:
                row["_source_file"] = landed_uri(folder, record.name)
            if "_ingested_at" in row:
                row["_ingested_at"] = datetime.now(UTC).replace(tzinfo=None)
            frame = spark.createDataFrame([tuple(row[f.name] for f in schema.fields)], schema)
            append_batch(frame, BatchWrite(spark, path, f"{app_id}:set-aside", record.seq))
    for record in pending:
        record.state = "recorded"
    ledger.save_records(records)


def retaken_name(name: str, seq: int, globs: Sequence[str], present: set[str]) -> str:
    """A new name for a file taken back in that the input's globs still match:
    ``events-1.retaken-3.json`` for ``events-1.json`` (before the first dot), else a prefix."""
    patterns = expand_globs(globs)
    stem, dot, rest = name.partition(".")
    for candidate in (f"{stem}.retaken-{seq}{dot}{rest}" if dot else f"{name}-retaken-{seq}", f"retaken-{seq}-{name}"):
        if matches(candidate, patterns) and candidate not in present:
            return candidate
    raise LakehouseError(
        f"cannot take {name} back in under a new name that the input's glob {', '.join(globs)} matches: "
        f"land a fixed copy under a new name instead"
    )


def take_back(
    folder: str,
    ledger: IntakeLedger,
    globs: Sequence[str],
    names: Sequence[str] | None,
    log: Log,
) -> list[str]:
    """Move the set-aside files ``names`` (None: all) back into ``folder``; their names there,
    :func:`retaken_name`: the old name is one Spark or the intake's cursor may remember. A file
    missing from ``_set_aside/`` is named in ``log`` and skipped."""
    finish_moves(folder, ledger)
    present = set(storage.list_names(folder))
    records = ledger.records()
    held = [r for r in records if r.state != "retaken"]
    chosen = [r for r in held if names is None or r.name in names or r.stored_as in names]
    unknown = set(names or []) - {r.name for r in chosen} - {r.stored_as for r in chosen}
    if unknown:
        raise LakehouseError(f"no file set aside in {folder} is named {', '.join(sorted(unknown))}")
    moved = []
    for record in chosen:
        kept = f"{folder}/{SET_ASIDE_FOLDER}/{record.stored_as}"
        if not storage.exists(kept) and not _is_link(kept):
            log(f"{record.name} is no longer in {SET_ASIDE_FOLDER}/ (removed by hand?): nothing to take back")
            record.state = "retaken"
            continue
        name = retaken_name(record.name, record.seq, globs, present)
        storage.move(kept, f"{folder}/{name}")
        present.add(name)
        record.state = "retaken"
        ledger.save_records(records)
        log(f"took {record.name} back in as {name} (it was set aside: {record.reason})")
        moved.append(name)
    ledger.save_records(records)
    return moved
