"""What becomes of a landed file once its rows are committed (Auto Loader's ``cleanSource``):
kept (``off``, the default), moved into an archive (``archive``: a folder or bucket prefix,
dated ``YYYY/MM/DD``, each day kept for ``retention``, forever when None) or deleted
``retention`` after its commit (``delete``).

A file is known committed from the intake's *drained* cursor (the listing taken before the last
query that read everything): every file it names, or that arrived before its grace window, was
read and committed by that query. Cleaning runs at the start of the next run, after the last
run's checks read the files; a move or delete is idempotent, so a run killed at any instant of it
leaves each file in the landing folder or in the archive, never in neither and never read twice
(Spark never reads a path it has recorded again)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from datetime import UTC, datetime

from lakehouse_assets.lib.declare.ddl import duration
from lakehouse_assets.lib.declare.inputs import LandingInput
from lakehouse_assets.lib.engine import faults, storage
from lakehouse_assets.lib.engine.intake.cursor import LandingCursor
from lakehouse_assets.lib.engine.intake.entries import Entry
from lakehouse_assets.lib.settings import LakehousePaths

Log = Callable[[str], None]


def archive_root(paths: LakehousePaths, source: LandingInput) -> str:
    """Where an ``archive`` input's files go: its ``archive_path``, else ``archive/<source>``
    under the data root."""
    return (source.archive_path or f"{paths.root}/archive/{source.source}").rstrip("/")


def committed(entry: Entry, drained: LandingCursor | None, grace_ns: int) -> bool:
    """Whether the last query that read everything read ``entry`` (see the module's docstring)."""
    if drained is None or not drained.hwm:
        return False
    return entry.name in drained.recent or entry.arrived_ns < drained.hwm - grace_ns


def clean(
    table: str,
    paths: LakehousePaths,
    source: LandingInput,
    folder: str,
    entries: Sequence[Entry],
    drained: LandingCursor | None,
    grace_ns: int,
    log: Log,
    now: datetime | None = None,
) -> set[str]:
    """Archive or delete the committed files of ``entries`` as ``source`` says; their names.

    :param table: the table (or flow) whose input this is, for messages and fault points.
    """
    if source.clean_source == "off":
        return set()
    now = now or datetime.now(UTC)
    keep_for = duration(source.retention) if source.retention else None
    done = set()
    for entry in entries:
        if entry.kind != "file" or not committed(entry, drained, grace_ns):
            continue
        if source.clean_source == "archive":
            day = now.strftime("%Y/%m/%d")
            with suppress(FileNotFoundError):  # moved by a run killed before it said so
                storage.move(f"{folder}/{entry.name}", f"{archive_root(paths, source)}/{day}/{entry.name}")
            done.add(entry.name)
            faults.reached(table, "after_landed_file_cleaned")
        elif keep_for is not None and entry.arrived_ns < (now - keep_for).timestamp() * 1e9:
            storage.delete(f"{folder}/{entry.name}")
            done.add(entry.name)
            faults.reached(table, "after_landed_file_cleaned")
    if done:
        verb = "archived" if source.clean_source == "archive" else "deleted"
        log(f"{source.described}: {verb} {len(done)} landed file(s) whose rows are committed")
    if source.clean_source == "archive" and keep_for is not None:
        prune_archive(archive_root(paths, source), now - keep_for, log)
    return done


def prune_archive(root: str, before: datetime, log: Log) -> int:
    """Delete the archive's day folders (``YYYY/MM/DD``) older than ``before``; how many."""
    pruned = 0
    cutoff = before.strftime("%Y/%m/%d")
    for year in storage.list_names(root):
        for month in storage.list_names(f"{root}/{year}") if year.isdigit() else []:
            for day in storage.list_names(f"{root}/{year}/{month}"):
                if f"{year}/{month}/{day}" < cutoff:
                    storage.delete(f"{root}/{year}/{month}/{day}")
                    pruned += 1
    if pruned:
        log(f"{root}: deleted {pruned} archived day folder(s) older than {cutoff}")
    return pruned
