"""Which landed files are new since a cursor whose size is bounded (the sensors' and the intake's).

Producers write ``_name`` (or ``.name``) and rename it when complete; complete files are
immutable. A file's *arrival* is the moment it got its final name. Its modification time says
nothing about that (``mv``, ``cp -p`` and ``rsync -t`` keep an old mtime), so the cursor uses
the inode's change time (``st_ctime``), which the kernel sets to "now" on every rename,
``utime`` and write, and never lets a user set back.

The cursor (JSON) holds

* ``hwm``: the newest arrival seen (ns),
* ``recent``: the names that arrived within ``grace`` of ``hwm`` (the only names it keeps),
* ``n``: how many complete files the folder held at the last evaluation;
* for a sensor's listing (:mod:`lakehouse_assets.lib.orchestrate.landing`), the
  *name mark*: ``mark``, the greatest complete name the folder held at its last listing, ``below``,
  how many complete names at or before it it held then, ``skipped``, those of them nothing reads
  (at most :data:`MAX_SKIPPED`), and ``full_at``, when every entry was last looked at. A later
  listing stats only the names after the mark (and those not accounted for when the count of
  names at or before it says one was added). For an object store the mark is the greatest *file*
  name, ``below`` counts files only and ``below_sum`` sums their names (:func:`name_sum`): a
  listing asks only for the names after the mark (``from_mark``), unless ``below_changed_at`` says
  a whole listing lately found that sum changed (a name landed before the mark, or files removed).

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
from dataclasses import dataclass, field, replace

# A folder is listed at least this often, whatever its modification time says.
FULL_LISTING_S = 300
# A name mark is kept only while the entries nothing reads at or before it are this few.
MAX_SKIPPED = 100


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
    # The folder's modification time (ns) at a listing that found nothing the cursor lacks, when
    # (this machine's clock, ns) the first such listing with that time started, whether a second
    # one at least a second later confirmed it, and when the last listing started (0: not known).
    stamp: int = 0
    stamp_at: int = 0
    confirmed: bool = False
    listed_at: int = 0
    # The name mark (see the module's docstring; "" when none).
    mark: str = ""
    below: int = 0
    skipped: tuple[str, ...] = ()
    full_at: int = 0
    # Object storage: when a whole listing last found the files at or before the mark changed,
    # an order-free sum of their names (:func:`name_sum`), and whether this cursor's listing asked
    # only for the names after the mark.
    below_changed_at: int = 0
    below_sum: int = 0
    from_mark: bool = False

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
            bool(data.get("confirmed", False)),
            int(data.get("listed_at", 0)),
            str(data.get("mark", "")),
            int(data.get("below", 0)),
            tuple(str(x) for x in data.get("skipped", ())),
            int(data.get("full_at", 0)),
            int(data.get("below_changed_at", 0)),
            int(data.get("below_sum", 0)),
            bool(data.get("from_mark", False)),
        )

    def dump(self) -> str:
        data = {"v": 1, "hwm": self.hwm, "n": self.n, "recent": self.recent}
        data |= {"warned": self.warned} if self.warned else {}
        stamp = {
            "stamp": self.stamp,
            "stamp_at": self.stamp_at,
            "confirmed": self.confirmed,
            "listed_at": self.listed_at,
        }
        data |= stamp if self.stamp else {}
        mark = {"mark": self.mark, "below": self.below, "skipped": list(self.skipped), "full_at": self.full_at}
        data |= mark if self.mark else {}
        data |= {"below_changed_at": self.below_changed_at} if self.below_changed_at else {}
        data |= {"below_sum": self.below_sum, "from_mark": self.from_mark} if self.below_sum else {}
        return json.dumps(data, sort_keys=True)

    def unchanged(self, stamp: int | None, now_ns: int) -> bool:
        """Whether a folder whose modification time is now ``stamp`` holds nothing new since the
        cursor's last listing. A folder's time moves with every entry added, renamed or removed,
        but in steps of its clock's tick, and that clock may not be this machine's: a time is
        trusted only once two listings that found nothing new, a second or more apart, saw it
        (a rename within the first listing's tick would have shown in the second). Every
        :data:`FULL_LISTING_S` the folder is listed anyway (a mount that never moves its time)."""
        recent = now_ns - self.listed_at < FULL_LISTING_S * 1_000_000_000
        return bool(stamp) and stamp == self.stamp and self.confirmed and recent

    def quiet_listing(self, stamp: int | None, started_ns: int) -> LandingCursor:
        """The cursor after a listing that found nothing it lacks, the folder's time ``stamp``
        just before the listing started at ``started_ns``."""
        if not stamp:
            return replace(self, stamp=0, stamp_at=0, confirmed=False, listed_at=started_ns)
        if stamp == self.stamp and self.stamp_at:
            confirmed = self.confirmed or started_ns - self.stamp_at >= 1_000_000_000
            return replace(self, confirmed=confirmed, listed_at=started_ns)
        return replace(self, stamp=stamp, stamp_at=started_ns, confirmed=False, listed_at=started_ns)


def name_sum(names: Iterable[str], start: int = 0) -> int:
    """``start`` plus a 64-bit hash of each name, modulo 2**64: the same for the same names in any
    order, so a sum kept name by name can be checked against one of a whole listing."""
    total = start
    for name in names:
        total += int.from_bytes(hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8).digest())
    return total % (1 << 64)


def digest(names: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(names).encode("utf-8", "surrogateescape")).hexdigest()[:16] if names else ""


@dataclass(frozen=True)
class Evaluation:
    new: list[LandedFile]
    unidentified: int  # files beyond what the cursor can name (arrived before the window)
    next_cursor: LandingCursor

    @property
    def has_work(self) -> bool:
        return bool(self.new) or self.unidentified > 0

    def run_key(self, source: str) -> str:
        names = "\n".join(sorted(f.name for f in self.new)).encode(
            "utf-8", "surrogateescape"
        )  # any name a folder holds
        digest = hashlib.sha256(names).hexdigest()[:16]
        return f"{source}:{self.next_cursor.hwm}:{self.next_cursor.n}:{digest}"


def evaluate(files: Iterable[LandedFile], cursor: LandingCursor, grace_ns: int, old: int = 0) -> Evaluation:
    """Which files are new since ``cursor``, and the cursor to store once they are handled;
    ``old`` more files the folder holds are known to be neither new nor recent (counted, not
    named: those a listing found at or before the cursor's name mark)."""
    files = list(files)
    floor = cursor.hwm - grace_ns if cursor.hwm else None
    new = [f for f in files if f.name not in cursor.recent and (floor is None or f.arrived_ns >= floor)]
    unidentified = max(0, len(files) + old - cursor.n - len(new))
    hwm = max([cursor.hwm, *(f.arrived_ns for f in files)])
    recent = {f.name: f.arrived_ns for f in files if f.arrived_ns >= hwm - grace_ns}
    # A folder stamp is trusted only after quiet listings: one with new files resets it.
    trusted = cursor.confirmed and not new and not unidentified
    return Evaluation(new, unidentified, replace(cursor, hwm=hwm, recent=recent, n=len(files) + old, confirmed=trusted))
