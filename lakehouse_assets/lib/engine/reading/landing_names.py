"""Which names in a landing folder are read: the contract's in-progress prefixes and the
Hadoop-style globs (``*.{json,jsonl}``) that landing inputs declare."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from pyarrow import fs as pafs
from pyspark.sql import Column
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.inputs import LandingInput
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.paths import LakehousePaths

IN_PROGRESS_PREFIXES = ("_", ".")
# A reader option of Spark's file sources: paths given are read as names, never as glob patterns
# (a file named ``ev*.json`` would otherwise read every ``ev…json``). Spark's file stream
# source sets it for the files it plans.
NO_GLOB = "__globPaths__"


# Characters Spark's file stream source cannot take in a landed file's name: with a glob
# character (* ? [ ] { } \\) the micro-batch reads every other file of the batch twice; with a
# colon, reading fails (Hadoop takes it for a URI scheme). Measured on Spark 4.2.
UNREADABLE_NAME_CHARACTERS = "*?[]{}\\:"


def name_problem(name: str) -> str | None:
    """Why Spark cannot read a file by this name (see :data:`UNREADABLE_NAME_CHARACTERS`), or None."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not UTF-8 text, which Spark's file source cannot name; land it under a UTF-8 name"
    found = sorted({c for c in name if c in UNREADABLE_NAME_CHARACTERS})
    if not found:
        return None
    return (
        (
            f"its name holds {' '.join(found)}, which Spark's file source reads as a pattern or a URI "
            "(it would read other files twice, or fail); land it under a name without * ? [ ] {{ }} \\ :"
        )
        .replace("{{", "{")
        .replace("}}", "}")
    )


def landing_folder(paths: LakehousePaths, source: LandingInput) -> str:
    """Where the input's files land: ``landing/<source>`` under the data root, or its own path."""
    return source.path or paths.landing(source.source)


def is_complete(name: str) -> bool:
    """Contract: names starting with ``_`` or ``.`` are still being written."""
    return not name.startswith(IN_PROGRESS_PREFIXES)


def expand_braces(pattern: str) -> list[str]:
    """Hadoop-style ``{a,b}`` alternatives (not nested) as plain fnmatch patterns."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [p for alt in match.group(1).split(",") for p in expand_braces(head + alt + tail)]


def expand_globs(globs: Sequence[str]) -> list[str]:
    """Every glob's alternatives as plain fnmatch patterns (expand once per listing)."""
    return [p for g in globs for p in expand_braces(g)]


def matches(name: str, patterns: Sequence[str]) -> bool:
    """Whether ``name`` matches one of ``patterns`` (from :func:`expand_globs`)."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def not_ingested(folder: str, globs: Sequence[str]) -> list[str]:
    """Complete entries of ``folder`` that no input reads: folders (``name/``; Spark reads only
    the files directly in a landing folder) and files no glob matches. Sorted."""
    patterns, skipped = expand_globs(globs), []
    for entry in storage.list_entries(folder):
        if not is_complete(entry.base_name):
            continue
        if entry.type == pafs.FileType.Directory:
            skipped.append(entry.base_name + "/")
        elif not matches(entry.base_name, patterns):
            skipped.append(entry.base_name)
    return sorted(skipped)


def describe_not_ingested(folder: str, names: Sequence[str], globs: Sequence[str]) -> str:
    """One sentence for a warning: what is in ``folder`` that will not be ingested, and why."""
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (
        f"{len(names)} entr{'y' if len(names) == 1 else 'ies'} in {folder} will not be ingested: {shown} "
        f"(folders are not read; file names must match {', '.join(globs)}; in-progress names start with _ or .)"
    )


def as_landed(uri: Column) -> Column:
    """A file path or name as Spark gives it (``_metadata.file_path``, URL-encoded: a space is
    ``%20``) as it landed. A ``+`` is itself in Spark's encoding, so it is kept from the decoder,
    which would read it as a space."""
    return F.url_decode(F.replace(uri, F.lit("+"), F.lit("%2B")))
