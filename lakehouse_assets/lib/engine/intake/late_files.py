"""The files of a landing folder that arrived after a given time, looking at only what may be new.

The freshness sensor (each minute) and each run's ``caught_up_with_landing`` check ask which
files of each landing folder arrived after what the tables hold. A folder kept for years holds
every file ever landed, and a listing that looks at each file (one ``stat`` each) costs more
every day. :class:`LateFiles` remembers, from its last listing of a local folder: the greatest
name of a file it saw (its mark), a digest of the names and inode numbers at or before it, the
entries that are not files to read, and the files that arrived after the time asked. The next
listing reads the folder's names and inode numbers (one directory read, no ``stat``) and looks
at only the names after the mark, and again at entries that may have become files (a folder, a
link, an entry that could not be read).

It looks at every entry again when the digest differs (a name sorting before the mark was added,
as a producer whose names do not follow time does, or removed, as retention does, or a file was
replaced by another under its name), when the time asked moves back (a table's full refresh),
and once an hour. A file rewritten in place keeps the arrival it had when first seen.

Object storage lists each object's arrival with its name, 1,000 a request. On S3, once a folder
holds :data:`FROM_MARK_MIN_FILES` files, a listing asks only for the names after the mark
(``start-after``, one request) and takes the late files at or before it from the memo; every
:data:`OBJECTS_FULL_LISTING_S` it lists whole, so a name landed before the mark (a producer whose
names do not follow time) is seen within that time.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from lakehouse_assets.lib.engine.intake.cursor import FULL_LISTING_S as OBJECTS_FULL_LISTING_S
from lakehouse_assets.lib.engine.intake.entries import (
    FROM_MARK_MIN_FILES,
    Entry,
    list_entries,
    list_objects_after,
    local_entry,
    local_folder,
)
from lakehouse_assets.lib.engine.reading.landing_names import expand_globs, is_complete, name_problem
from lakehouse_assets.lib.engine.state import storage

# A folder with more entries that are not files to read than this is listed whole each time.
MAX_OTHERS = 1000
# Every entry is looked at again at least this often.
FULL_LISTING_S = 3600
# A memo holding more late files than this is not stored (a table that never ran waits for all).
MAX_STORED_LATE = 10_000
_MASK = (1 << 64) - 1


def _token(name: str, inode: int) -> int:
    return ((zlib.crc32(name.encode()) << 32) ^ inode) & _MASK


@dataclass
class _Memo:
    mark: str  # the greatest name of a file to read
    digest: int  # the sum of _token over the files at or before the mark
    fixed: list[str]  # entries that will never be files to read, by their name alone
    recheck: list[str]  # other entries that are not files to read now (folders, links, unreadable)
    after_ns: int
    late: dict[str, int]  # name -> arrival: the files at or before the mark that arrived after after_ns
    full_at: float  # when every entry was last looked at (epoch s)
    files: int = 0  # object storage: the files at or before the mark

    def dump(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def load(cls, text: str | None) -> _Memo | None:
        try:
            return cls(**json.loads(text)) if text else None
        except (ValueError, TypeError):
            return None  # unreadable or of another version: list whole, then store a new one


class LateFiles:
    """Listings of landing folders kept from one call to the next (e.g. a sensor's ticks), and
    across processes in ``state`` (e.g. each run's ``caught_up_with_landing`` check).

    ``looked_at`` counts the entries looked at one by one, across calls.

    :param state: a folder to keep each landing folder's memo in (a small JSON file each;
        whichever process writes last wins, and any memo written is true of its own listing).
    """

    def __init__(self, state: str | None = None) -> None:
        self._memos: dict[tuple[str, tuple[str, ...]], _Memo] = {}
        self._state = state
        self.looked_at = 0

    def _stored(self, key: tuple[str, tuple[str, ...]]) -> str | None:
        if self._state is None:
            return None
        return f"{self._state}/{hashlib.sha1(json.dumps(key).encode()).hexdigest()[:16]}.json"

    def files(self, folder: str, globs: tuple[str, ...], after_ns: int) -> list[Entry]:
        """The files of ``folder`` that ``globs`` match and that arrived after ``after_ns``
        (epoch ns), complete and readable.

        :param folder: the landing folder, a local path or ``file:`` URI, or object storage.
        :param globs: the file names read.
        :param after_ns: the arrival time asked about (-1: every file).
        """
        key = (folder, globs)
        stored = self._stored(key)
        memo = self._memos.pop(key, None) or (_Memo.load(storage.read_text(stored)) if stored else None)
        local = local_folder(folder)
        if local is None:
            memo, late = self._objects(folder, globs, memo, after_ns)
        else:
            usable = memo is not None and after_ns >= memo.after_ns and time.time() - memo.full_at < FULL_LISTING_S
            since = self._since_mark(local, globs, memo, after_ns) if memo is not None and usable else None
            memo, late = (
                (memo, since) if memo is not None and since is not None else self._list_all(local, globs, after_ns)
            )
        memo.after_ns, memo.late = after_ns, {e.name: e.arrived_ns for e in late}
        keep = len(memo.fixed) + len(memo.recheck) <= MAX_OTHERS
        if keep:
            self._memos[key] = memo
        if stored:
            if keep and len(late) <= MAX_STORED_LATE:
                storage.write_text(stored, memo.dump())
            else:
                storage.delete(stored)  # an older memo would only cost a listing that finds it stale
        return late

    def _objects(
        self, folder: str, globs: tuple[str, ...], memo: _Memo | None, after_ns: int
    ) -> tuple[_Memo, list[Entry]]:
        """The late files of the object store's ``folder``: from its mark when ``memo`` allows (see
        the module's docstring), else from a whole listing; with the memo to keep."""
        fresh = memo is not None and time.time() - memo.full_at < OBJECTS_FULL_LISTING_S
        usable = memo is not None and fresh and memo.files >= FROM_MARK_MIN_FILES and after_ns >= memo.after_ns
        listed = list_objects_after(folder, globs, memo.mark) if memo is not None and usable else None
        if memo is None or listed is None:
            memo, late, found = _Memo("", 0, [], [], after_ns, {}, time.time()), [], list_entries(folder, globs)
        else:
            late = [Entry(name, "file", arrived) for name, arrived in memo.late.items() if arrived > after_ns]
            found = [e for e in listed if e.name > memo.mark]  # a store may ignore start-after
        self.looked_at += len(found)
        files = [e for e in found if e.kind == "file"]
        late += [e for e in files if e.arrived_ns > after_ns]
        memo.mark, memo.files = max([memo.mark, *(e.name for e in files)]), memo.files + len(files)
        return memo, late

    @staticmethod
    def _scan(folder: Path) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(folder) as scanned:
                return [e for e in scanned if is_complete(e.name)]
        except FileNotFoundError:
            return []

    def _look(self, entry: os.DirEntry[str], folder: Path, patterns: list[str]) -> Entry | None:
        self.looked_at += 1
        return local_entry(entry, folder, patterns, links_inside=False)

    def _list_all(self, folder: Path, globs: tuple[str, ...], after_ns: int) -> tuple[_Memo, list[Entry]]:
        memo = _Memo("", 0, [], [], after_ns, {}, time.time())
        late: list[Entry] = []
        self._add(memo, self._scan(folder), folder, expand_globs(globs), after_ns, late)
        return memo, late

    def _add(
        self,
        memo: _Memo,
        entries: list[os.DirEntry[str]],
        folder: Path,
        patterns: list[str],
        after_ns: int,
        late: list[Entry],
    ) -> None:
        """Look at ``entries`` (all after ``memo``'s mark) one by one: the late files go to
        ``late``, the rest into ``memo``; the mark moves to the greatest file name."""
        files = []
        for entry in entries:
            found = self._look(entry, folder, patterns)
            if found is None:
                continue  # gone while listing
            if found.kind != "file":
                fixed = found.kind == "unmatched" or (found.kind == "refused" and name_problem(found.name))
                (memo.fixed if fixed else memo.recheck).append(found.name)
                continue
            files.append((found.name, entry.inode()))
            if found.arrived_ns > after_ns:
                late.append(found)
        if files:
            memo.mark = max(name for name, _ in files)
            memo.digest = (memo.digest + sum(_token(n, i) for n, i in files)) & _MASK

    def _since_mark(self, folder: Path, globs: tuple[str, ...], memo: _Memo, after_ns: int) -> list[Entry] | None:
        """The late files, looking at only the entries after ``memo``'s mark and those to look at
        again (``memo`` updated); None when the files at or before the mark are not those it saw."""
        fixed, recheck = set(memo.fixed), set(memo.recheck)
        late: list[Entry] = []
        after, again, still_fixed = [], [], []
        digest = 0
        for entry in self._scan(folder):
            name = entry.name
            if name in fixed:
                still_fixed.append(name)
            elif name in recheck:
                again.append(entry)
            elif name > memo.mark:
                after.append(entry)
            else:
                digest = (digest + _token(name, entry.inode())) & _MASK
                arrived = memo.late.get(name)
                if arrived is not None and arrived > after_ns:
                    late.append(Entry(name, "file", arrived))
        if digest != memo.digest:
            return None
        patterns = expand_globs(globs)
        memo.fixed, memo.recheck = still_fixed, []
        for entry in again:
            found = self._look(entry, folder, patterns)
            if found is not None and found.kind == "file":
                return None  # became a file to read (a link replaced, a permission granted)
            if found is not None:
                memo.recheck.append(found.name)
        self._add(memo, after, folder, patterns, after_ns, late)
        return late
