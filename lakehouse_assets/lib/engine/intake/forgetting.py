"""Spark's file source remembers every file it ever read: each query start reads the latest
compact file of its log (``sources/<i>/<n>.compact``) and the batch files after it whole, ~300
bytes a file, so a year of landings costs every run hundreds of MB (``maxFileAge`` does not
shorten it). For an input whose files leave the landing folder once committed
(``clean_source``), that memory is moot: a name no longer in the folder cannot be listed again.
Worse, it is wrong for a file landed again under a cleaned name, which Spark would skip without
a word.

So after retention cleans, the entries of committed source batches whose files are no longer in
the folder are dropped from the log files Spark reads at its start: the log then holds what the
landing folder holds, what a run reads of it is bounded by the files since its last compact file
(at most 10 source batches, each emptied by the run after it), and a name landed again is read
as the new file it is (retention archives it beside its namesake:
:func:`~lakehouse_assets.lib.engine.state.storage.move_beside`).

Kept: every entry of a source batch the query has not committed (a replay reads them), and every
entry whose file is still in the folder. A log file is rewritten whole (written beside and
renamed over; its Hadoop ``.crc`` removed first, so a crash leaves the old file, which reads, or
the new); nothing is kept in the intake's ledger, so a run killed before it forgot leaves the
work to the next.
"""

from __future__ import annotations

from collections.abc import Callable

from lakehouse_assets.lib.engine.reading.source_log import (
    LogEntry,
    committed_log_offset,
    file_source_of,
    in_folder,
    log_entry,
    read_files,
)
from lakehouse_assets.lib.engine.state import storage


def _rewrite(path: str, keep: Callable[[LogEntry], bool]) -> set[str] | None:
    """Rewrite the log file ``path`` with the entries ``keep`` holds; the names dropped, or None
    when a line does not read as an entry (then nothing changes)."""
    lines = (storage.read_text(path) or "").splitlines()
    if not lines or not lines[0].startswith("v"):
        return None
    kept, dropped = [lines[0]], set()
    for line in lines[1:]:
        entry = log_entry(line)
        if entry is None:
            return None
        if keep(entry):
            kept.append(line)
        else:
            dropped.add(entry.name)
    if dropped:
        folder, file = path.rsplit("/", 1)
        crc = f"{folder}/.{file}.crc"
        if storage.exists(crc):
            storage.delete(crc)  # Hadoop's local file system checks a file against it when present
        storage.write_text(path, "\n".join(kept))  # as Spark writes it: no final newline
    return dropped


def forget_cleaned(query_checkpoint: str, folder: str, present: set[str]) -> set[str]:
    """Drop from the log files the file source reading ``folder`` reads at its start the
    entries of committed source batches whose files are not in ``present`` (the folder's names
    now); the names dropped (none when the log does not read as expected: nothing changed)."""
    source = file_source_of(query_checkpoint, folder)
    committed = committed_log_offset(query_checkpoint, source.index) if source else None
    if source is None or committed is None:
        return set()

    def keep(entry: LogEntry) -> bool:
        # Planned, not committed (or of no known batch); still landed; or outside the folder
        # itself (a sub-folder's file is none of retention's).
        planned = entry.batch > committed or entry.batch < 0
        return planned or entry.name in present or not in_folder(entry.path, folder)

    dropped: set[str] = set()
    for file in read_files(source):
        dropped |= _rewrite(f"{source.log}/{file}", keep) or set()
    return dropped
