"""What a landing sensor sees: the complete entries of one landing folder that a run must
handle (files to read, and entries a run sets aside), and which of them are new since the
sensor's cursor (:mod:`lakehouse_assets.lib.engine.intake.cursor`: arrival = rename time, not
mtime; a cursor bounded by a grace window, not by the folder's history).

A listing never follows a link nor raises for one entry: a link loop, a permission or an entry
gone while listing is an entry like another (:mod:`lakehouse_assets.lib.engine.intake.entries`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lakehouse_assets.lib.engine.intake.cursor import Evaluation, LandedFile, LandingCursor, digest, evaluate
from lakehouse_assets.lib.engine.intake.entries import list_entries

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

    def stamped(self, cursor: LandingCursor) -> LandingCursor:
        """``cursor``, which holds every file of this listing, stamped with it."""
        return replace(cursor, stamp=self.stamp or 0, stamp_at=self.started_ns)


def folder_stamp(folder: Path | str) -> int | None:
    """A local folder's modification time (ns); None for object storage, or a folder not there."""
    if not isinstance(folder, Path):
        return None
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


def scan(folder: Path | str, globs: Sequence[str] = ("*",)) -> Listing:
    """The complete entries directly in ``folder`` that a run handles (files the globs match,
    and links or other entries it sets aside), oldest arrival first; ``folder`` is a local path
    or an object storage URI."""
    started, stamp = time.time_ns(), folder_stamp(folder)
    files, not_read, in_progress = [], [], 0
    for entry in list_entries(str(folder), globs):
        if entry.kind == "in_progress":
            in_progress += 1
        elif entry.kind in ("file", "refused"):
            files.append(LandedFile(entry.name, entry.arrived_ns, entry.size))
        else:
            not_read.append(entry.name + ("/" if entry.kind == "folder" else ""))
    files.sort(key=lambda f: (f.arrived_ns, f.name))
    return Listing(files, in_progress, tuple(sorted(not_read)), stamp, started)
