"""Spark's file source remembers every file it ever read: each query start reads the latest
compact file of its log (``sources/<i>/<n>.compact``) whole, ~300 bytes a file, so a year of
landings costs every run hundreds of MB (``maxFileAge`` does not shorten it). For an input whose
files leave the landing folder once committed (``clean_source``), that memory is moot: a name no
longer in the folder cannot be listed again. Once per compact file, the intake drops the
entries of cleaned files from it, so the log holds what the landing folder holds.

Kept: every entry of a source batch the query has not committed (a replay reads them), and
every entry whose file is still in the folder (Spark must not read it twice). The file is
rewritten whole (written beside and renamed over; its Hadoop ``.crc`` removed first, so a crash
leaves the old file, which reads, or the new). A file landed again under a cleaned name is then
read as a new file, as it should be; before the compact that forgets it, Spark skips it, as
Auto Loader does by default (``cloudFiles.allowOverwrites`` false).
"""

from __future__ import annotations

import json
from urllib.parse import unquote

from lakehouse_assets.lib.engine.reading.source_log import committed_log_offset, latest_compact
from lakehouse_assets.lib.engine.state import storage


def forget_cleaned(query_checkpoint: str, folder: str, present: set[str], done_through: int) -> tuple[int, int]:
    """Drop from the latest compact file of the file source reading ``folder`` the entries of
    committed source batches whose files are not in ``present`` (the folder's names now).

    :param done_through: the compact batch already done (a compact file is looked at once).
    :returns: (the compact batch now done, entries dropped); ``done_through`` and 0 when there
        is nothing to do or the log does not read as expected (then nothing is changed).
    """
    found = latest_compact(query_checkpoint, folder)
    if found is None or found[1] <= done_through:
        return done_through, 0
    log, compact, index = found
    committed = committed_log_offset(query_checkpoint, index)
    if committed is None:
        return done_through, 0
    path = f"{log}/{compact}.compact"
    text = storage.read_text(path) or ""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("v"):
        return done_through, 0
    kept = [lines[0]]
    for line in lines[1:]:
        try:
            entry = json.loads(line)
            name, batch = unquote(str(entry["path"]).rstrip("/").rsplit("/", 1)[-1]), int(entry["batchId"])
        except (ValueError, KeyError, TypeError):
            return done_through, 0
        if batch > committed or name in present:
            kept.append(line)
    dropped = len(lines) - len(kept)
    if dropped:
        crc = f"{log}/.{compact}.compact.crc"
        if storage.exists(crc):
            storage.delete(crc)  # Hadoop's local file system checks a file against it when present
        storage.write_text(path, "\n".join(kept))  # as Spark writes it: no final newline
    return compact, dropped
