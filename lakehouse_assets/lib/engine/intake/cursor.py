"""Which landed files are new since a cursor whose size is bounded (the sensors' and the intake's).

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LandedFile:
    name: str
    arrived_ns: int
    size: int


@dataclass
class LandingCursor:
    hwm: int = 0
    recent: dict[str, int] = field(default_factory=dict)
    n: int = 0
    # Digest of the entries last warned about as not read (a warning per change, not per tick).
    warned: str = ""
    # The folder's modification time (ns) when a listing found nothing the cursor lacks, and when
    # that listing started: while the folder's time is the same, nothing landed since (see
    # :meth:`unchanged`). 0: not known.
    stamp: int = 0
    stamp_at: int = 0

    @classmethod
    def load(cls, text: str | None) -> LandingCursor:
        if not text:
            return cls()
        data = json.loads(text)
        recent = {k: int(v) for k, v in data.get("recent", {}).items()}
        return cls(
            int(data.get("hwm", 0)),
            recent,
            int(data.get("n", 0)),
            str(data.get("warned", "")),
            int(data.get("stamp", 0)),
            int(data.get("stamp_at", 0)),
        )

    def dump(self) -> str:
        data = {"v": 1, "hwm": self.hwm, "n": self.n, "recent": self.recent}
        data |= {"warned": self.warned} if self.warned else {}
        data |= {"stamp": self.stamp, "stamp_at": self.stamp_at} if self.stamp else {}
        return json.dumps(data, sort_keys=True)

    def unchanged(self, stamp: int | None) -> bool:
        """Whether a folder whose modification time is now ``stamp`` holds nothing new since the
        listing the cursor was stamped with. A folder's time moves with every entry added,
        renamed or removed, but in steps of the kernel's clock tick: a stamp taken within a second
        of the listing is not trusted (two renames in one tick would look like one), as git does
        with its index."""
        return bool(stamp) and stamp == self.stamp and self.stamp_at - stamp > 1_000_000_000


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
