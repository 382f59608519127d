"""What a streaming query's file source has recorded in its checkpoint: ``sources/<i>/``, one log
file per planned read of the source (``<n>``, or ``<n>.compact`` holding every entry up to n),
each a ``v1`` line then a JSON object per file (``path`` URL-encoded, the source's own
``batchId``); and ``offsets/<batch>``, whose lines after the first two are each source's offset
(``{"logOffset": n}`` for files) when the batch was planned."""

from __future__ import annotations

import json
from urllib.parse import unquote

from lakehouse_assets.lib.engine import storage


def logged_entries(names_and_texts: list[tuple[str, str]]) -> list[tuple[str, int]] | None:
    """Each logged file's base name (decoded) and the source batch that read it; None if a line
    does not read as an entry, so the caller assumes nothing."""
    entries: list[tuple[str, int]] = []
    for _, text in names_and_texts:
        for line in text.splitlines()[1:]:
            try:
                entry = json.loads(line)
                path, batch = str(entry["path"]), int(entry.get("batchId", -1))
            except (ValueError, KeyError, TypeError):
                return None
            entries.append((unquote(path.rstrip("/").rsplit("/", 1)[-1]), batch))
    return entries


def seen_files(names_and_texts: list[tuple[str, str]]) -> set[str] | None:
    """The base names of the files a file source's log records; None if a line does not read."""
    entries = logged_entries(names_and_texts)
    return None if entries is None else {name for name, _ in entries}


def _log_texts(folder: str) -> list[tuple[str, str]]:
    names = [n for n in storage.list_names(folder) if n.removesuffix(".compact").isdigit()]
    return [(n, storage.read_text(f"{folder}/{n}") or "") for n in names]


def _reads_folder(texts: list[tuple[str, str]], folder: str) -> bool:
    """Whether the log's files are in ``folder`` (any scheme; a relative folder matches its end)."""
    tail = folder.rstrip("/").split("://", 1)[-1].lstrip("/")
    for _, text in texts:
        for line in text.splitlines()[1:2]:
            try:
                parent = unquote(str(json.loads(line)["path"]).rsplit("/", 1)[0])
            except (ValueError, KeyError, TypeError):
                return False
            return parent.rstrip("/").endswith(tail)
    return False


def committed_files(query_checkpoint: str, folder: str) -> set[str]:
    """The files of ``folder`` that micro-batches the query has committed read (a planned batch
    without its commit is read again by the next run, so its files are not among them). Empty
    when the checkpoint says nothing readable: the caller then treats every file as pending."""
    commits = [int(n) for n in storage.list_names(f"{query_checkpoint}/commits") if n.isdigit()]
    if not commits:
        return set()
    offsets = (storage.read_text(f"{query_checkpoint}/offsets/{max(commits)}") or "").splitlines()[2:]
    for index, offset in enumerate(offsets):
        texts = _log_texts(f"{query_checkpoint}/sources/{index}")
        if not texts or not _reads_folder(texts, folder):
            continue
        try:
            read_up_to = int(json.loads(offset)["logOffset"])
        except (ValueError, KeyError, TypeError):
            return set()
        entries = logged_entries(texts) or []
        return {name for name, batch in entries if 0 <= batch <= read_up_to}
    return set()
