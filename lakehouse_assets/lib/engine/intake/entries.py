"""A landing folder's entries as data: each complete entry with what it is, its arrival and its
size, and (for one that cannot be taken in) why. Listing never follows a link, and an entry that
cannot be looked at (a loop, a permission, one gone while listing) is reported, never raised."""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from xml.etree import ElementTree

from pyarrow import fs as pafs

from lakehouse_assets.lib.engine.intake.cursor import FULL_LISTING_S
from lakehouse_assets.lib.engine.reading.landing_names import expand_globs, is_complete, matches, name_problem
from lakehouse_assets.lib.engine.state import s3_api, storage
from lakehouse_assets.lib.settings import current

_LOG = logging.getLogger(__name__)
# When a folder's start-after listing last failed in this process: it is not asked for again
# before FULL_LISTING_S (each request may wait LIST_TIMEOUT_S, and a sensor tick has seconds).
_FAILED_AT: dict[str, float] = {}
# An object store's folder is listed from a name (:func:`list_objects_after`) once it holds this
# many files: below, a whole listing is one request too. The sensors' and freshness listings.
FROM_MARK_MIN_FILES = 1000
EntryKind = Literal["file", "folder", "unmatched", "refused", "in_progress"]
SET_ASIDE_FOLDER = "_set_aside"


@dataclass(frozen=True)
class Entry:
    """A complete entry of a landing folder.

    :param name: its name in the folder.
    :param kind: ``file`` (read), ``folder`` and ``unmatched`` (not read: no glob matches),
        ``refused`` (cannot be taken in: ``problem`` says why), ``in_progress`` (a name starting
        with ``_`` or ``.``: still being written, or the framework's own).
    :param arrived_ns: when it got its name (the inode's change time; an object's upload time).
    :param size: its size in bytes as stored (0 when unknown).
    :param problem: why a ``refused`` entry cannot be taken in.
    """

    name: str
    kind: EntryKind
    arrived_ns: int = 0
    size: int = 0
    problem: str | None = None


def _link_target(
    path: Path, folder: Path, inside_allowed: bool, patterns: list[str]
) -> tuple[os.stat_result | None, str | None]:
    """A link's target's status when it may be read (``inside_allowed`` and the target is a
    regular file inside ``folder``), else why not."""
    try:
        target = path.resolve(strict=True)
    except RuntimeError:
        return None, "it is a symbolic link loop"
    except OSError as error:
        if "loop" in str(error).lower() or getattr(error, "errno", 0) == 40:  # ELOOP
            return None, "it is a symbolic link loop"
        return None, f"it is a symbolic link whose target cannot be read ({error.strerror})"
    if not inside_allowed:
        return None, f"it is a symbolic link (to {target}); links are not read (LAKEHOUSE_LANDING_LINKS)"
    if folder.resolve() not in target.parents:
        return None, f"it is a symbolic link to {target}, outside its landing folder"
    if target.parent == folder.resolve() and matches(target.name, patterns):
        return None, f"it is a symbolic link to {target.name}, which is read itself (its lines would be read twice)"
    try:
        return target.stat(), None
    except OSError as error:
        return None, f"its link target {target} cannot be read ({error.strerror})"


def local_entry(entry: os.DirEntry[str], folder: Path, patterns: list[str], links_inside: bool) -> Entry | None:
    """What the complete entry ``entry`` of the local ``folder`` is (one ``stat``); None when it
    went while being looked at.

    :param patterns: the file names read (:func:`expand_globs` of the input's globs).
    :param links_inside: links to regular files inside ``folder`` are read.
    """
    name = entry.name
    try:
        status = entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return None  # gone while listing: renamed or removed; the next listing sees what became of it
    except OSError as error:
        return Entry(name, "refused", problem=f"it cannot be looked at ({error.strerror})")
    arrived = status.st_ctime_ns
    if stat.S_ISLNK(status.st_mode):
        target, problem = _link_target(Path(entry.path), folder, links_inside, patterns)
        if target is None:
            return Entry(name, "refused", arrived, 0, problem)
        status = target
    if stat.S_ISDIR(status.st_mode):
        return Entry(name, "folder", arrived)
    if not matches(name, patterns):
        return Entry(name, "unmatched", arrived, status.st_size)
    if not stat.S_ISREG(status.st_mode):
        return Entry(name, "refused", arrived, 0, "it is not a regular file (a pipe, socket or device)")
    if name_problem(name):
        return Entry(name, "refused", arrived, status.st_size, name_problem(name))
    if not os.access(entry.path, os.R_OK):
        return Entry(name, "refused", arrived, status.st_size, "it cannot be read (permission denied)")
    return Entry(name, "file", arrived, status.st_size)


def list_local(folder: Path, globs: Sequence[str], links_inside: bool = False) -> list[Entry]:
    """The entries directly in the local ``folder`` (none when it does not exist).

    :param folder: the landing folder.
    :param globs: the file names read (Hadoop-style globs).
    :param links_inside: links to regular files inside ``folder`` are read; every other link
        is refused.
    """
    patterns = expand_globs(globs)
    try:
        scanned = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    found = (
        local_entry(e, folder, patterns, links_inside) if is_complete(e.name) else Entry(e.name, "in_progress")
        for e in scanned
    )
    return [e for e in found if e is not None]


def object_entry(name: str, folder: bool, modified_ns: int, size: int, patterns: list[str]) -> Entry:
    """What the entry ``name`` directly under a listed prefix is: an object appears whole when
    its upload completes (its arrival), and object storage has no links.

    :param name: its name under the prefix.
    :param folder: it is a common prefix (a sub-folder).
    :param modified_ns: its ``LastModified``, in ns.
    :param size: its size in bytes.
    :param patterns: the file names read (:func:`expand_globs` of the input's globs).
    """
    if not is_complete(name):
        return Entry(name, "in_progress")
    if folder:
        return Entry(name, "folder")
    kind: EntryKind = "file" if matches(name, patterns) else "unmatched"
    problem = name_problem(name) if kind == "file" else None
    return Entry(name, "refused" if problem else kind, modified_ns, size, problem)


def list_objects(prefix: str, globs: Sequence[str]) -> list[Entry]:
    """The objects directly under ``prefix`` (see :func:`object_entry`)."""
    patterns = expand_globs(globs)
    return [
        object_entry(i.base_name, i.type == pafs.FileType.Directory, int(i.mtime_ns or 0), int(i.size or 0), patterns)
        for i in storage.list_entries(prefix)
    ]


def list_objects_after(prefix: str, globs: Sequence[str], after: str) -> list[Entry] | None:
    """The entries directly under the S3 ``prefix`` whose names sort after ``after``, from a
    listing that starts there (its cost is what is after it, not the folder's size); None when
    that listing cannot be made here (another store, no key pair to sign it with, a store that
    refused, failed or answered something else, now or within ``FULL_LISTING_S``: the first
    such failure is logged): list the folder whole instead.

    :param prefix: the folder (``s3a://bucket/landing/events``).
    :param globs: the file names read (Hadoop-style globs).
    :param after: the name the listing starts after.
    """
    scheme, _, rest = prefix.partition("://")
    settings = current()
    if scheme not in ("s3", "s3a") or not (settings.s3_access_key and settings.s3_secret_key):
        return None
    if time.monotonic() - _FAILED_AT.get(prefix, -FULL_LISTING_S) < FULL_LISTING_S:
        return None
    bucket, _, key = rest.partition("/")
    try:
        listed = s3_api.list_after(settings, bucket, key, after)
    except (OSError, ValueError, ElementTree.ParseError) as error:
        if prefix not in _FAILED_AT:
            _LOG.warning("%s: listing the names after %r failed (%s); listing it whole", prefix, after, error)
        _FAILED_AT[prefix] = time.monotonic()
        return None
    patterns = expand_globs(globs)
    return [object_entry(o.name, o.folder, o.modified_ns, o.size, patterns) for o in listed]


def local_folder(folder: str) -> Path | None:
    """The local path of ``folder`` (a path or ``file:`` URI); None for object storage."""
    if "://" in folder and not folder.startswith("file:"):
        return None
    return Path(folder.removeprefix("file://").removeprefix("file:"))


def list_entries(folder: str, globs: Sequence[str], links_inside: bool = False) -> list[Entry]:
    """:func:`list_local` for a local folder (a path or ``file:`` URI), else :func:`list_objects`."""
    local = local_folder(folder)
    return list_objects(folder, globs) if local is None else list_local(local, globs, links_inside)
