"""What a landing sensor sees: the complete files of one landing folder, and a bounded cursor.

Producers write ``_name`` (or ``.name``) and rename it when complete; complete files are
immutable. A file's *arrival* is the moment it got its final name. Its modification time says
nothing about that (``mv``, ``cp -p`` and ``rsync -t`` keep an old mtime), so the cursor uses
the inode's change time (``st_ctime``), which the kernel sets to "now" on every rename,
``utime`` and write, and never lets a user set back.

The cursor (JSON) holds

* ``hwm``: the newest arrival seen (ns),
* ``recent``: the names that arrived within ``grace`` of ``hwm`` (the only names it keeps),
* ``n``: how many complete files the folder held at the last evaluation.

A file is new when its name is not in ``recent`` and it arrived after ``hwm - grace``. The
grace window covers directory listings that race a rename and arrivals reported slightly out
of order; ``n`` is a safety net for anything arriving "before" the window (a clock set back):
more files than expected means a run is requested anyway. So the cursor's size is bounded by
the files that arrived within ``grace`` (10 minutes by default) of the newest one, not by the
size of the landing folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyarrow import fs as pafs

from lakehouse_assets.lib.engine import storage
from lakehouse_assets.lib.engine.landing_names import expand_globs, is_complete, matches


@dataclass(frozen=True)
class LandedFile:
    name: str
    arrived_ns: int
    size: int


@dataclass(frozen=True)
class Listing:
    files: list[LandedFile]
    in_progress: int = 0
    # Complete entries nothing ingests: folders (``name/``) and files no glob matches.
    not_read: tuple[str, ...] = ()


def scan(folder: Path | str, globs: Sequence[str] = ("*",)) -> Listing:
    """The complete regular files directly in ``folder`` matching any of ``globs``; ``folder``
    is a local path or an object storage URI (see :func:`scan_objects`)."""
    if isinstance(folder, str):
        return scan_objects(folder, globs)
    patterns = expand_globs(globs)
    files, in_progress, not_read = [], 0, []
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return Listing([])
    for entry in entries:
        if not is_complete(entry.name):
            in_progress += 1
            continue
        try:
            if not entry.is_file(follow_symlinks=True):
                if entry.is_dir(follow_symlinks=True):
                    not_read.append(entry.name + "/")
                continue
            st = entry.stat(follow_symlinks=True)
        except FileNotFoundError:  # renamed or deleted while listing
            continue
        if not matches(entry.name, patterns):
            not_read.append(entry.name)
            continue
        files.append(LandedFile(entry.name, st.st_ctime_ns, st.st_size))
    files.sort(key=lambda f: (f.arrived_ns, f.name))
    return Listing(files, in_progress, tuple(sorted(not_read)))


def scan_objects(prefix: str, globs: Sequence[str] = ("*",)) -> Listing:
    """:func:`scan` on object storage, one listing through the storage API (no Spark job). An
    object appears whole when its upload completes, so its arrival is its Last-Modified time;
    there are no links, so nothing outside the prefix can be reached from it."""
    patterns = expand_globs(globs)
    files, in_progress, not_read = [], 0, []
    for entry in storage.list_entries(prefix):
        if not is_complete(entry.base_name):
            in_progress += 1
        elif entry.type == pafs.FileType.Directory:
            not_read.append(entry.base_name + "/")
        elif not matches(entry.base_name, patterns):
            not_read.append(entry.base_name)
        else:
            files.append(LandedFile(entry.base_name, int(entry.mtime_ns or 0), int(entry.size or 0)))
    files.sort(key=lambda f: (f.arrived_ns, f.name))
    return Listing(files, in_progress, tuple(sorted(not_read)))


@dataclass
class LandingCursor:
    hwm: int = 0
    recent: dict[str, int] = field(default_factory=dict)
    n: int = 0
    # Digest of the entries last warned about as not read (a warning per change, not per tick).
    warned: str = ""

    @classmethod
    def load(cls, text: str | None) -> LandingCursor:
        if not text:
            return cls()
        data = json.loads(text)
        recent = {k: int(v) for k, v in data.get("recent", {}).items()}
        return cls(int(data.get("hwm", 0)), recent, int(data.get("n", 0)), str(data.get("warned", "")))

    def dump(self) -> str:
        data = {"v": 1, "hwm": self.hwm, "n": self.n, "recent": self.recent}
        return json.dumps(data | ({"warned": self.warned} if self.warned else {}), sort_keys=True)


def digest(names: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16] if names else ""


@dataclass(frozen=True)
class Evaluation:
    new: list[LandedFile]
    unidentified: int  # files beyond what the cursor can name (arrived before the window)
    next_cursor: LandingCursor

    @property
    def has_work(self) -> bool:
        return bool(self.new) or self.unidentified > 0

    def run_key(self, source: str) -> str:
        digest = hashlib.sha256("\n".join(sorted(f.name for f in self.new)).encode()).hexdigest()[:16]
        return f"{source}:{self.next_cursor.hwm}:{self.next_cursor.n}:{digest}"


def evaluate(files: Iterable[LandedFile], cursor: LandingCursor, grace_ns: int) -> Evaluation:
    """Which files are new since ``cursor``, and the cursor to store once they are handled."""
    files = list(files)
    floor = cursor.hwm - grace_ns if cursor.hwm else None
    new = [f for f in files if f.name not in cursor.recent and (floor is None or f.arrived_ns >= floor)]
    unidentified = max(0, len(files) - cursor.n - len(new))
    hwm = max([cursor.hwm, *(f.arrived_ns for f in files)])
    recent = {f.name: f.arrived_ns for f in files if f.arrived_ns >= hwm - grace_ns}
    return Evaluation(new, unidentified, LandingCursor(hwm, recent, len(files), cursor.warned))
