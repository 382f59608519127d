"""What a streaming query's file source has recorded in its checkpoint: ``sources/<i>/``, one log
file per planned read of the source (``<n>``, or ``<n>.compact`` holding every entry up to n),
each a ``v1`` line then a JSON object per file (``path`` URL-encoded, the source's own
``batchId``); and ``offsets/<batch>``, whose lines after the first two are each source's offset
(``{"logOffset": n}`` for files) when the batch was planned."""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import unquote

from lakehouse_assets.lib.engine.state import storage


@dataclass(frozen=True)
class LogEntry:
    """One line of a file source's log after its ``v1``."""

    path: str
    """The file's URL as logged (encoded)."""
    name: str
    """Its base name, decoded."""
    batch: int
    """The source batch that read it (-1 when the line does not say)."""
    modified_ms: int = -1
    """The file's modification time when it was logged, in ms (-1 when the line does not say)."""


def log_entry(line: str) -> LogEntry | None:
    """The entry a log line records; None when it does not read as one."""
    try:
        entry = json.loads(line)
        path, batch = str(entry["path"]), int(entry.get("batchId", -1))
    except (ValueError, KeyError, TypeError):
        return None
    modified = entry.get("timestamp")
    modified_ms = modified if isinstance(modified, int) else -1
    return LogEntry(path, unquote(path.rstrip("/").rsplit("/", 1)[-1]), batch, modified_ms)


def logged_entries(names_and_texts: list[tuple[str, str]]) -> list[tuple[str, int]] | None:
    """Each logged file's base name (decoded) and the source batch that read it; None if a line
    does not read as an entry, so the caller assumes nothing."""
    entries: list[tuple[str, int]] = []
    for _, text in names_and_texts:
        for line in text.splitlines()[1:]:
            entry = log_entry(line)
            if entry is None:
                return None
            entries.append((entry.name, entry.batch))
    return entries


def seen_files(names_and_texts: list[tuple[str, str]]) -> set[str] | None:
    """The base names of the files a file source's log records; None if a line does not read."""
    entries = logged_entries(names_and_texts)
    return None if entries is None else {name for name, _ in entries}


def _log_texts(folder: str) -> list[tuple[str, str]]:
    names = [n for n in storage.list_names(folder) if n.removesuffix(".compact").isdigit()]
    return [(n, storage.read_text(f"{folder}/{n}") or "") for n in names]


def in_folder(path: str, folder: str) -> bool:
    """Whether the logged file ``path`` (a URL, encoded) is directly in ``folder`` (any scheme;
    a relative folder matches its end, at a ``/``)."""
    tail = folder.rstrip("/").split("://", 1)[-1].lstrip("/")
    parent = unquote(path.rstrip("/").rsplit("/", 1)[0]).rstrip("/")
    return parent == tail or parent.endswith("/" + tail)


def _reads_folder(texts: list[tuple[str, str]], folder: str) -> bool:
    """Whether the log's files are in ``folder`` (judged by its first entry)."""
    for _, text in texts:
        for line in text.splitlines()[1:2]:
            entry = log_entry(line)
            return entry is not None and in_folder(entry.path, folder)
    return False


def log_offset(line: str) -> int | None:
    """A file source's offset (``{"logOffset": n}``) from its line of ``offsets/<batch>``."""
    try:
        return int(json.loads(line)["logOffset"])
    except (ValueError, KeyError, TypeError):
        return None


def planned_files(query_checkpoint: str, folder: str) -> list[str] | None:
    """The base names of the files of ``folder`` that the query's last micro-batch planned and
    has not committed (the next run replays it); None when there is no such batch. Reads the
    two offsets files and the log files of that batch only."""
    batches = [int(n) for n in storage.list_names(f"{query_checkpoint}/offsets") if n.isdigit()]
    if not batches or storage.exists(f"{query_checkpoint}/commits/{max(batches)}"):
        return None
    planned = (storage.read_text(f"{query_checkpoint}/offsets/{max(batches)}") or "").splitlines()[2:]
    before = committed_offsets(query_checkpoint) or []
    for index, line in enumerate(planned):
        end = log_offset(line)
        start = log_offset(before[index]) if index < len(before) else -1
        if end is None or start is None:
            continue  # not a file source
        log, texts = f"{query_checkpoint}/sources/{index}", []
        for log_batch in range(start + 1, end + 1):
            text = storage.read_text(f"{log}/{log_batch}") or storage.read_text(f"{log}/{log_batch}.compact") or ""
            texts.append((str(log_batch), text, log_batch))
        if not texts or not _reads_folder([(n, t) for n, t, _ in texts], folder):
            continue
        entries = [(name, batch, wanted) for _, t, wanted in texts for name, batch in logged_entries([("", t)]) or []]
        return [name for name, batch, wanted in entries if batch == wanted]
    return None


def _head(path: str, size: int = 16384) -> str:
    """The first ``size`` bytes of the file at ``path`` (its first lines), as text."""
    filesystem, inner = storage.resolve(path)
    try:
        with filesystem.open_input_stream(inner, compression=None) as stream:
            return stream.read(size).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


@dataclass(frozen=True)
class FileSource:
    """A query's file source: its log folder, index in the offsets, and latest compact batch."""

    log: str
    index: int
    compact: int | None
    batches: tuple[int, ...]
    """The log's batch files (each ``<n>``, or ``<n>.compact``), oldest first."""


def read_files(source: FileSource) -> list[str]:
    """The log files Spark reads when the query starts: the latest compact file, those after."""
    after = [b for b in source.batches if source.compact is None or b >= source.compact]
    return [f"{b}.compact" if b == source.compact else str(b) for b in after]


def file_source_of(query_checkpoint: str, folder: str) -> FileSource | None:
    """The query's file source reading ``folder``; None when no log file read at its start
    names a file (a log emptied by :mod:`~lakehouse_assets.lib.engine.intake.forgetting`
    remembers nothing). Reads the first lines of one or a few log files."""
    for index in storage.list_names(f"{query_checkpoint}/sources"):
        log = f"{query_checkpoint}/sources/{index}"
        names = [n for n in storage.list_names(log) if n.removesuffix(".compact").isdigit()]
        if not index.isdigit() or not names:
            continue
        compacts = [int(n.removesuffix(".compact")) for n in names if n.endswith(".compact")]
        batches = tuple(sorted({int(n.removesuffix(".compact")) for n in names}))
        source = FileSource(log, int(index), max(compacts) if compacts else None, batches)
        for file in reversed(read_files(source)):
            head = _head(f"{log}/{file}").split("\n", 2)
            if len(head) > 1 and head[1].strip():
                if _reads_folder([("", "\n".join(head[:2]))], folder):
                    return source
                break
    return None


def committed_offsets(query_checkpoint: str) -> list[str] | None:
    """Each source's offset line as of the query's last committed micro-batch; None before any."""
    committed = [int(n) for n in storage.list_names(f"{query_checkpoint}/commits") if n.isdigit()]
    if not committed:
        return None
    return (storage.read_text(f"{query_checkpoint}/offsets/{max(committed)}") or "").splitlines()[2:]


def committed_log_offset(query_checkpoint: str, index: int) -> int | None:
    """The file source ``index``'s log offset as of the query's last committed micro-batch
    (-1 before any); None when it does not read as a file source's offset."""
    lines = committed_offsets(query_checkpoint)
    if lines is None:
        return -1
    return log_offset(lines[index]) if index < len(lines) else None


def seen_files_of(query_checkpoint: str, folder: str) -> set[str] | None:
    """Every base name of ``folder`` the query's file source has recorded (its whole log: read
    once, when a table's intake first meets a checkpoint older than it); None: no log."""
    for index in storage.list_names(f"{query_checkpoint}/sources"):
        texts = _log_texts(f"{query_checkpoint}/sources/{index}")
        if texts and _reads_folder(texts, folder):
            return seen_files(texts)
    return None
