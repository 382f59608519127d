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
costs one request per 1,000 names. On S3 (and stores that speak its API), once a folder holds a
page of files or more, a tick asks only for the names after the mark, the greatest *file* name
(``ListObjectsV2``'s ``start-after``: one request however many files the folder keeps). Such a
listing cannot see the names at or before the mark: the files there are taken as the cursor
summed them (``below_sum``, an order-free sum of their names, each new file's added) until the
next whole listing, within ``FULL_LISTING_S``. When that listing's sum differs (a name landed
there: names that do not sort by arrival, or a slow upload whose time, its start, is older than
the cursor's window; or files removed) it requests a run, whether or not it can name a new file,
and the folder is listed whole for :data:`WHOLE_AFTER_CHANGE_S` after (``below_changed_at``), as
every tick did before. Folders and files nothing reads are named from the cursor's ``skipped``
between whole listings, and in-progress names (``_x``) are counted only after the mark.
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
    name_sum,
)
from lakehouse_assets.lib.engine.intake.entries import (
    FROM_MARK_MIN_FILES,
    list_entries,
    list_objects_after,
    local_entry,
)
from lakehouse_assets.lib.engine.reading.landing_names import expand_globs, is_complete

# An object store's folder is listed whole for this long after the files before its mark changed.
WHOLE_AFTER_CHANGE_S = 24 * 3600

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
    # The name mark this listing leaves ("": none) and when every entry was last looked at (this
    # listing's start for a full one); for object storage, when a file last landed before a mark.
    mark: str = ""
    below: int = 0
    skipped: tuple[str, ...] = ()
    full_at: int = 0
    below_changed_at: int = 0
    below_sum: int = 0
    from_mark: bool = False
    # A whole listing of an object store's folder whose cursor came from a listing after its mark
    # found the files at or before the mark changed: a run is owed even if no file is named new.
    doubt: bool = False
    # A whole listing of an object store's folder found them as the cursor summed them.
    checked: bool = False

    @property
    def count(self) -> int:
        """The complete files the folder holds."""
        return len(self.files) + self.old

    def evaluate(self, cursor: LandingCursor, grace_ns: int) -> Evaluation:
        """Which of this listing's files are new since ``cursor`` (:func:`evaluate`); one more is
        owed a run, unnamed, when the listing is in :attr:`doubt`."""
        result = evaluate(self.files, cursor, grace_ns, self.old)
        return replace(result, unidentified=1) if self.doubt and not result.has_work else result

    def marked(self, cursor: LandingCursor) -> LandingCursor:
        """``cursor``, which holds every file of this listing, with the name mark it leaves."""
        return replace(
            cursor,
            mark=self.mark,
            below=self.below,
            skipped=self.skipped,
            full_at=self.full_at,
            below_changed_at=self.below_changed_at,
            below_sum=self.below_sum,
            from_mark=self.from_mark,
        )

    def checked_cursor(self, cursor: LandingCursor) -> LandingCursor | None:
        """``cursor`` with its whole listing's time moved to this listing's, when this one is a
        whole listing that found the files at or before its mark as it summed them (a tick that
        keeps no cursor, waiting for a run, then lists from the mark again); else None."""
        return replace(cursor, full_at=self.full_at) if self.checked else None

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
    or an object storage URI. With ``cursor``, the names at or before its mark are not looked at
    one by one (see the module's docstring)."""
    started, stamp = time.time_ns(), folder_stamp(folder)
    fresh = cursor is not None and started - cursor.full_at < FULL_LISTING_S * 1_000_000_000
    if cursor is not None and cursor.mark and fresh:
        if isinstance(folder, Path):
            since = _since_mark(folder, globs, cursor, stamp, started)
        else:
            since = _objects_since_mark(folder, globs, cursor, started)
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
    listing = Listing(files, in_progress, tuple(sorted(not_read)), stamp, started, full_at=started)
    if not isinstance(folder, Path):
        return _objects_listed_whole(listing, cursor)
    if len(not_read) > MAX_SKIPPED:
        return listing
    names = [f.name for f in files] + [n.removesuffix("/") for n in not_read]
    return replace(listing, mark=max(names, default=""), below=len(names), skipped=tuple(sorted(not_read)))


def _objects_listed_whole(listing: Listing, cursor: LandingCursor | None) -> Listing:
    """A whole listing of an object store's folder with the mark it leaves, the greatest *file*
    name (a folder "archive/" may sort after the files), and, against ``cursor``'s mark, whether
    the files at or before it are those the cursor summed (each name hashed once)."""
    files, mark = listing.files, cursor.mark if cursor is not None else ""
    before = name_sum(f.name for f in files if f.name <= mark)
    if cursor is not None and cursor.mark and cursor.below_sum:
        same = before == cursor.below_sum
        doubt = cursor.from_mark and not same
        changed_at = listing.started_ns if doubt else cursor.below_changed_at
        listing = replace(listing, doubt=doubt, checked=same, below_changed_at=changed_at)
    if len(listing.not_read) > MAX_SKIPPED:
        return listing
    total = name_sum((f.name for f in files if f.name > mark), before)
    greatest = max((f.name for f in files), default="")
    return replace(listing, mark=greatest, below=len(files), skipped=listing.not_read, below_sum=total)


def _from_mark(cursor: LandingCursor, now_ns: int) -> bool:
    """Whether an object store's folder is listed from ``cursor``'s mark: it has one and the sum
    of the names before it, holds a page of files or more, and no whole listing found the files
    before the mark changed lately."""
    lately = now_ns - cursor.below_changed_at < WHOLE_AFTER_CHANGE_S * 1_000_000_000
    marked = bool(cursor.mark) and bool(cursor.below_sum) and cursor.below >= FROM_MARK_MIN_FILES
    return marked and not (cursor.below_changed_at and lately)


def _objects_since_mark(folder: str, globs: Sequence[str], cursor: LandingCursor, started: int) -> Listing | None:
    """The listing of the object store's ``folder`` that asks only for the names after
    ``cursor``'s mark; the files at or before it are taken as the cursor summed them (recent
    ones named, the rest counted), the entries nothing reads as it named them. None when the
    folder is to be listed whole (:func:`_from_mark`), or the store cannot list from a name."""
    if not _from_mark(cursor, started):
        return None
    after = list_objects_after(folder, globs, cursor.mark)
    if after is None:
        return None
    files = [LandedFile(name, arrived, 0) for name, arrived in cursor.recent.items() if name <= cursor.mark]
    old = max(0, cursor.below - len(files))
    known = {n.removesuffix("/") for n in cursor.skipped}
    not_read = list(cursor.skipped)
    new_mark, below, in_progress = cursor.mark, cursor.below, 0
    # A store that ignores start-after answers with every name; S3 lists a folder "a/" after "a-1".
    for found in (f for f in after if f.name > cursor.mark):
        if found.kind == "in_progress":
            in_progress += 1
        elif found.kind in ("file", "refused"):
            new_mark, below = max(new_mark, found.name), below + 1
            files.append(LandedFile(found.name, found.arrived_ns, found.size))
        elif found.name not in known:
            not_read.append(found.name + ("/" if found.kind == "folder" else ""))
    below_sum = name_sum((f.name for f in files if f.name > cursor.mark), cursor.below_sum)
    files.sort(key=lambda f: (f.arrived_ns, f.name))
    shown = tuple(sorted(not_read))
    kept = new_mark if len(shown) <= MAX_SKIPPED else ""
    listing = Listing(files, in_progress, shown, None, started, old, kept, below, shown, cursor.full_at)
    return replace(listing, below_changed_at=cursor.below_changed_at, below_sum=below_sum, from_mark=True)


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
