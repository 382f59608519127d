"""The idle skip of a folder a table's own function streams through Spark's file source (an SDP
flow's ``spark.readStream...load(path)``): when the query reads that one source, its last batch
committed every entry of the source's log, and every file Spark would list in the folder is in
that log with the modification time logged for it, starting the query would only read its
checkpoint and find nothing. Anything unsure answers "run the query": a folder this process
cannot see, a store it cannot list, a sub-folder, a log written past the committed offset."""

from __future__ import annotations

from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs

from lakehouse_assets.lib.declare.file_streams import FileStream
from lakehouse_assets.lib.engine.reading.source_log import (
    committed_offsets,
    file_source_of,
    log_entry,
    log_offset,
    read_files,
)
from lakehouse_assets.lib.engine.state import storage

# Stores this process lists the way the engine does (others may hang or answer otherwise).
_SCHEMES = ("file", "s3", "s3a")


def _location(path: str) -> tuple[str, str]:
    """``(scheme, path)`` of a Spark path or URL, so ``file:/a``, ``file:///a`` and ``/a`` agree."""
    if "://" in path:
        scheme, rest = path.split("://", 1)
    elif path.startswith("file:"):
        scheme, rest = "file", path.removeprefix("file:")
    else:
        scheme, rest = "file", path
    scheme = "s3" if scheme == "s3a" else scheme
    return scheme, ("/" + rest.lstrip("/") if scheme == "file" else rest).rstrip("/")


def listable(path: str) -> bool:
    """Absolute (a relative path is resolved in the engine's working folder, which the run cannot
    see) and on a store this process lists."""
    if "://" in path:
        return path.split("://", 1)[0] in _SCHEMES
    return path.startswith(("/", "file:/"))


def hidden(name: str) -> bool:
    """Whether Spark's file listing leaves the entry out (``InMemoryFileIndex.shouldFilterOutPathName``)."""
    excluded = (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")
    return excluded and not name.startswith(("_common_metadata", "_metadata"))


def listed_files(folder: str) -> dict[str, int] | None:
    """Each file Spark's file source lists in ``folder`` and its modification time (ms); None
    when the folder is not one here, or holds a visible sub-folder (Spark reads into it)."""
    filesystem, inner = storage.resolve(folder)
    if filesystem.get_file_info(inner).type != pafs.FileType.Directory:
        return None  # the engine may see a folder this process does not
    listed: dict[str, int] = {}
    for entry in storage.list_entries(folder):
        if hidden(entry.base_name):
            continue
        if entry.type != pafs.FileType.File or entry.mtime_ns is None:
            return None
        listed[entry.base_name] = entry.mtime_ns // 1_000_000
    return listed


def _committed_log_batch(query_checkpoint: str) -> int | None:
    """The file-source log batch the query's last committed micro-batch reached, when the query
    reads exactly one source and it is a file source; else None."""
    sources = committed_offsets(query_checkpoint)
    return log_offset(sources[0]) if sources is not None and len(sources) == 1 else None


def logged_files(query_checkpoint: str, folder: str) -> dict[str, int] | None:
    """Each of ``folder``'s files in the query's file-source log (what Spark reads at start:
    the latest compact file and those after) and its logged modification time; None when the
    log is not that folder's or holds an entry its last committed batch did not reach."""
    source = file_source_of(query_checkpoint, folder)
    if source is None or _committed_log_batch(query_checkpoint) != max(source.batches):
        return None
    logged: dict[str, int] = {}
    for file in read_files(source):
        for line in (storage.read_text(f"{source.log}/{file}") or "").splitlines()[1:]:
            entry = log_entry(line)
            if entry is None or _location(unquote(entry.path).rsplit("/", 1)[0]) != _location(folder):
                return None
            logged[entry.name] = entry.modified_ms
    return logged


def idle_file_stream(query_checkpoint: str, stream: FileStream) -> str | None:
    """``stream``'s path when Spark would find no file there that the query has not taken; else
    None. The caller has checked that the query's last batch committed and its outputs exist."""
    if not stream.takes_every_file or not listable(stream.path):
        return None
    try:
        listed = listed_files(stream.path)
        logged = logged_files(query_checkpoint, stream.path) if listed is not None else None
    except (OSError, ValueError, pa.ArrowException):  # a store this process cannot read (the engine may)
        return None
    if listed is None or logged is None:
        return None
    # A name logged with another modification time is a file landed again: Spark may take it.
    return stream.path if all(logged.get(name) == mtime for name, mtime in listed.items()) else None
