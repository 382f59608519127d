"""What becomes of a landed file once its rows are committed (Auto Loader's ``cleanSource``):
kept (``off``, the default), moved into an archive (``archive``: a folder or bucket prefix,
dated ``YYYY/MM/DD``, each day kept for ``retention``, forever when None) or deleted
``retention`` after its commit (``delete``).

Only names known to be read are cleaned: the intake records the files it admits, and when a query
has read everything it listed (the run's ``finish``) they become *committed*. The next run cleans
them before its own query (after the last run's checks read them), never a name its planned
micro-batch has yet to replay. A move or delete is idempotent, so a run killed at any instant
leaves each file in the landing folder or in the archive, never in neither and never read twice
(Spark never reads again a path it recorded while the file is landed: :mod:`.forgetting`
forgets only the files that left).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime, timedelta

from lakehouse_assets.lib.declare.ddl import duration
from lakehouse_assets.lib.declare.inputs import LandingInput
from lakehouse_assets.lib.engine import faults
from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger, IntakeState
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.paths import LakehousePaths

Log = Callable[[str], None]


def archive_root(paths: LakehousePaths, source: LandingInput) -> str:
    """Where an ``archive`` input's files go: its ``archive_path``, else ``archive/<source>``
    under the data root."""
    return (source.archive_path or f"{paths.root}/archive/{source.source}").rstrip("/")


def clean(
    table: str,
    paths: LakehousePaths,
    source: LandingInput,
    folder: str,
    ledger: IntakeLedger,
    state: IntakeState,
    planned: set[str],
    log: Log,
    now: datetime | None = None,
) -> set[str]:
    """Archive or delete the committed files of ``state`` as ``source`` says (``state`` is
    updated, not saved); the names no longer in the landing folder.

    :param table: the table (or flow) whose input this is, for messages and fault points.
    :param planned: names a planned micro-batch has yet to read again: never cleaned.
    """
    if source.clean_source == "off":
        return set()
    now = now or datetime.now(UTC)
    keep_for = duration(source.retention) if source.retention else None
    due = [n for n in state.committed if n not in planned]
    if source.clean_source == "delete":
        due = _due_for_deletion(ledger, due, now, keep_for or timedelta(0))
    done = set()
    for name in due:
        if source.clean_source == "archive":
            with suppress(FileNotFoundError):  # moved by a run killed before it said so
                # Beside a namesake archived before (a name landed again), never over it.
                storage.move_beside(f"{folder}/{name}", f"{archive_root(paths, source)}/{now:%Y/%m/%d}/{name}")
        else:
            storage.delete(f"{folder}/{name}")
        done.add(name)
        faults.reached(table, "after_landed_file_cleaned")
    state.committed = sorted(n for n in state.committed if n in planned)
    if done:
        verb = "archived" if source.clean_source == "archive" else "deleted"
        log(f"{source.described}: {verb} {len(done)} landed file(s) whose rows are committed")
    if source.clean_source == "archive" and keep_for is not None:
        prune_archive(archive_root(paths, source), now - keep_for, log)
    return done


def _due_for_deletion(ledger: IntakeLedger, committed: list[str], now: datetime, keep_for: timedelta) -> list[str]:
    """Record ``committed`` under today's commit day; the names whose day's end is ``keep_for``
    behind ``now`` (those days' records then go)."""
    today = f"{now:%Y-%m-%d}"
    if committed:
        ledger.save_committed(today, [*ledger.committed_on(today), *committed])
    due = []
    for day in ledger.commit_days():
        committed_by = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC) + timedelta(days=1)
        if (day == today and keep_for <= timedelta(0)) or committed_by + keep_for <= now:
            due += ledger.committed_on(day)
            ledger.save_committed(day, [])
    return due


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
