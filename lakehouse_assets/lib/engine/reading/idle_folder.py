"""The idle skip of a folder a table's own function streams through Spark's file source (an SDP
flow's ``spark.readStream...load(path)``): when every file Spark would list there is already in
the query's file-source log, the last batch committed and the outputs exist, starting the query
would only read its checkpoint and find nothing. Anything unsure answers "run the query"."""

from __future__ import annotations

from urllib.parse import unquote

from lakehouse_assets.lib.declare.file_streams import FileStream
from lakehouse_assets.lib.engine.reading.source_log import file_source_of, log_entry, read_files
from lakehouse_assets.lib.engine.state import storage


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


def is_absolute(path: str) -> bool:
    """A relative path is resolved by the engine's working folder, which the run cannot see."""
    return "://" in path or path.startswith(("/", "file:/"))


def hidden(name: str) -> bool:
    """Whether Spark's file listing leaves the entry out (``InMemoryFileIndex.shouldFilterOutPathName``)."""
    excluded = (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")
    return excluded and not name.startswith(("_common_metadata", "_metadata"))


def listed_names(folder: str) -> set[str]:
    """The names of the entries Spark's file source lists in ``folder``. A sub-folder's name is
    one of them: Spark reads into it (partition discovery), and it is never a logged file's."""
    return {entry.base_name for entry in storage.list_entries(folder) if not hidden(entry.base_name)}


def logged_files(query_checkpoint: str, folder: str) -> set[str] | None:
    """The names of ``folder``'s files in the query's file-source log (what Spark reads at
    start: the latest compact file and those after); None when the log is not that folder's."""
    source = file_source_of(query_checkpoint, folder)
    if source is None:
        return None
    names: set[str] = set()
    for file in read_files(source):
        for line in (storage.read_text(f"{source.log}/{file}") or "").splitlines()[1:]:
            entry = log_entry(line)
            if entry is None or _location(unquote(entry.path.rsplit("/", 1)[0])) != _location(folder):
                return None
            names.add(entry.name)
    return names


def idle_file_stream(query_checkpoint: str, stream: FileStream) -> str | None:
    """``stream``'s path when Spark would find no file there that the query has not taken; else
    None. The caller has checked that the query's last batch committed and its outputs exist."""
    if not stream.takes_every_file or not is_absolute(stream.path):
        return None
    try:
        listed = listed_names(stream.path)
        logged = logged_files(query_checkpoint, stream.path)
    except (OSError, ValueError):  # a store this process cannot read (the engine may): run
        return None
    return stream.path if logged is not None and listed <= logged else None
