"""What a landing sensor sees: the complete entries of one landing folder that a run must
handle (files to read, and entries a run sets aside), and which of them are new since the
sensor's cursor (:mod:`lakehouse_assets.lib.engine.intake.cursor`: arrival = rename time, not
mtime; a cursor bounded by a grace window, not by the folder's history).

A listing never follows a link nor raises for one entry: a link loop, a permission or an entry
gone while listing is an entry like another (:mod:`lakehouse_assets.lib.engine.intake.entries`).

A tick's cost is flat in the folder's history where it can be (issue #54): given the cursor's
*name mark* (the greatest complete name the last listing saw, and how many names at or before
it there were), a listing of a local folder reads every directory entry (``os.scandir``, one
``getdents`` per few hundred names) but stats only the names after the mark: a producer whose
names sort by time (``ev-20260105-0001.json``, a sequence) lands each new file after it. A name
at or before the mark is accounted for by the cursor (a recent name by its arrival, an older one
by the count); when that count says a name was added at or before the mark (a producer whose
names do not sort by time), or every ``FULL_LISTING_S``, the listing stats every entry, as
before.

Object storage lists a page of 1,000 keys a request, each with its size and time, so a listing
costs one request per 1,000 names. On S3 (and stores that speak its API) a tick asks for the
names after the mark only (``ListObjectsV2``'s ``start-after``: one request however many files
the folder holds). Such a listing cannot count the names at or before the mark: a name landed
there is seen by the next whole listing, within ``FULL_LISTING_S``, and that listing marks the
folder ``unordered`` (its names do not sort by arrival), whose ticks then list it whole as before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lakehouse_assets.lib.engine.intake.cursor import (
    FULL_LISTING_S,
    MAX_SKIPPED,
    Evaluation,
    LandedFile,
    LandingCursor,
    digest,
    evaluate,
)
from lakehouse_assets.lib.engine.intake.entries import list_entries, list_objects_after, local_entry
from lakehouse_assets.lib.engine.reading.landing_names import expand_globs, is_complete

__all__ = ["Evaluation", "LandedFile", "LandingCursor", "Listing", "digest", "evaluate", "folder_stamp", "scan"]


@dataclass(frozen=True)
class Listing:
    files: list[LandedFile]
    in_progress: int = 0
    # Complete entries nothing ingests: folders (``name/``) and files no glob matches.
    not_read: tuple[str, ...] = ()
    # The folder's modification time just before it was listed (None: not a local folder), and when.
    stamp: int | None = None
    started_ns: int = 0
    # Files at or before the cursor's name mark, neither new nor recent: counted, not in ``files``.
    old: int = 0
    # The name mark this listing leaves ("": none, object storage) and when every entry was
    # last looked at (this listing's start for a full one).
    mark: str = ""
    below: int = 0
    skipped: tuple[str, ...] = ()
    full_at: int = 0
    unordered: bool = False

    @property
    def count(self) -> int:
        """The complete files the folder holds."""
        return len(self.files) + self.old

    def marked(self, cursor: LandingCursor) -> LandingCursor:
        """``cursor``, which holds every file of this listing, with the name mark it leaves."""
        return replace(
            cursor,
            mark=self.mark,
            below=self.below,
            skipped=self.skipped,
            full_at=self.full_at,
            unordered=self.unordered,
        )

    def stamped(self, cursor: LandingCursor) -> LandingCursor:
        """``cursor``, which holds every file of this listing, stamped with it and marked."""
        return self.marked(cursor.quiet_listing(self.stamp, self.started_ns))


def folder_stamp(folder: Path | str) -> int | None:
    """A local folder's modification time (ns); None for object storage, or a folder not there."""
    if not isinstance(folder, Path):
        return None
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


def scan(folder: Path | str, globs: Sequence[str] = ("*",), cursor: LandingCursor | None = None) -> Listing:
    """The complete entries directly in ``folder`` that a run handles (files the globs match,
    and links or other entries it sets aside), oldest arrival first; ``folder`` is a local path
    or an object storage URI. With ``cursor``, a local folder's names at or before its mark are
    not looked at one by one (see the module's docstring)."""
    started, stamp = time.time_ns(), folder_stamp(folder)
    fresh = cursor is not None and started - cursor.full_at < FULL_LISTING_S * 1_000_000_000
    if cursor is not None and cursor.mark and fresh:
        if isinstance(folder, Path):
            since = _since_mark(folder, globs, cursor, stamp, started)
        else:
            since = None if cursor.unordered else _objects_since_mark(folder, globs, cursor, started)
        if since is not None:
            return since
    files, not_read, in_progress = [], [], 0
    for entry in list_entries(str(folder), globs):
        if entry.kind == "in_progress":
            in_progress += 1
        elif entry.kind in ("file", "refused"):
            files.append(LandedFile(entry.name, entry.arrived_ns, entry.size))
        else:
            not_read.append(entry.name + ("/" if entry.kind == "folder" else ""))
    files.sort(key=lambda f: (f.arrived_ns, f.name))
    names = [f.name for f in files] + [n.removesuffix("/") for n in not_read]
    unordered = cursor is not None and not isinstance(folder, Path) and _landed_before_mark(names, cursor)
    listing = Listing(files, in_progress, tuple(sorted(not_read)), stamp, started, full_at=started, unordered=unordered)
    if len(not_read) > MAX_SKIPPED:
        return listing
    return replace(listing, mark=max(names, default=""), below=len(names), skipped=tuple(sorted(not_read)))


def _landed_before_mark(names: list[str], cursor: LandingCursor) -> bool:
    """Whether an object store's folder's names were seen not to sort by arrival: before, or now
    (a whole listing holds more names at or before the cursor's mark than the cursor counted)."""
    return cursor.unordered or (bool(cursor.mark) and sum(1 for n in names if n <= cursor.mark) > cursor.below)


def _objects_since_mark(folder: str, globs: Sequence[str], cursor: LandingCursor, started: int) -> Listing | None:
    """The listing of the object store's ``folder`` that asks only for the names after
    ``cursor``'s mark; the names at or before it are taken as the cursor counted them (recent
    ones named, the rest counted). None when the store cannot list from a name."""
    after = list_objects_after(folder, globs, cursor.mark)
    if after is None:
        return None
    files = [LandedFile(name, arrived, 0) for name, arrived in cursor.recent.items() if name <= cursor.mark]
    not_read = list(cursor.skipped)
    old = max(0, cursor.below - len(files) - len(not_read))
    new_mark, below, in_progress = cursor.mark, cursor.below, 0
    for found in after:
        if found.kind == "in_progress":
            in_progress += 1
            continue
        new_mark, below = max(new_mark, found.name), below + 1
        if found.kind in ("file", "refused"):
            files.append(LandedFile(found.name, found.arrived_ns, found.size))
        else:
            not_read.append(found.name + ("/" if found.kind == "folder" else ""))
    files.sort(key=lambda f: (f.arrived_ns, f.name))
    shown = tuple(sorted(not_read))
    kept = new_mark if len(shown) <= MAX_SKIPPED else ""
    return Listing(files, in_progress, shown, None, started, old, kept, below, shown, cursor.full_at)


def _since_mark(
    folder: Path, globs: Sequence[str], cursor: LandingCursor, stamp: int | None, started: int
) -> Listing | None:
    """The listing of ``folder`` that stats only the names after ``cursor``'s mark; None when the
    names at or before it do not add up to the cursor's count (one was added there: list all)."""
    try:
        with os.scandir(folder) as scanned:
            entries = list(scanned)
    except FileNotFoundError:
        entries = []
    mark, recent = cursor.mark, cursor.recent
    skipped = {n.removesuffix("/"): n for n in cursor.skipped}
    files, after, not_read = [], [], []
    in_progress = below = old = 0
    for entry in entries:
        name = entry.name
        if not is_complete(name):
            in_progress += 1
        elif name > mark:
            after.append(entry)
        else:
            below += 1
            if name in recent:
                files.append(LandedFile(name, recent[name], 0))
            elif name in skipped:
                not_read.append(skipped[name])
            else:
                old += 1
    gone = sum(1 for name in recent if name <= mark) - len(files)  # recent names removed since
    if below != cursor.below - gone:
        return None
    patterns = expand_globs(globs)
    new_mark = mark
    for entry in after:
        found = local_entry(entry, folder, patterns, False)
        if found is None:
            continue
        new_mark, below = max(new_mark, found.name), below + 1
        if found.kind in ("file", "refused"):
            files.append(LandedFile(found.name, found.arrived_ns, found.size))
        else:
            not_read.append(found.name + ("/" if found.kind == "folder" else ""))
    files.sort(key=lambda f: (f.arrived_ns, f.name))
    shown = tuple(sorted(not_read))
    kept = new_mark if len(shown) <= MAX_SKIPPED else ""
    return Listing(files, in_progress, shown, stamp, started, old, kept, below, shown, cursor.full_at)
