"""The files of a landing folder that arrived after a given time, looking at only what may be new.

The freshness sensor asks each minute which files of each landing folder arrived after what the
tables hold. A folder kept for years holds every file ever landed, and a listing that looks at
each file (one ``stat`` each) costs more every day. :class:`LateFiles` remembers, from its last
listing of a folder: the greatest name it saw (its mark), how many complete names sort at or
before it, and those of its files that arrived after the time asked. The next listing reads the
folder's names (one directory read, no ``stat``) and looks at only the names after the mark.

It looks at every file again when the names at or before the mark no longer add up (a name
sorting there was added, as a producer whose names do not follow time does, or removed, as
retention does), or when the time asked moves back (a table's full refresh). Object storage
lists each object's arrival with its name: nothing is remembered there. A file rewritten in
place under a name already seen keeps the arrival it had when first seen.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from lakehouse_assets.lib.engine.intake.entries import Entry, list_entries, local_entry, local_folder
from lakehouse_assets.lib.engine.reading.landing_names import expand_globs, is_complete
from lakehouse_assets.lib.engine.state import storage

# A folder with more entries that are not files to read than this is listed whole each time.
MAX_OTHERS = 1000
# Every file is looked at again at least this often (a refused file made readable, say).
FULL_LISTING_S = 3600
# A memo holding more late files than this is not stored (a table that never ran waits for all).
MAX_STORED_LATE = 10_000


@dataclass
class _Memo:
    mark: str  # the greatest name of a file to read
    below: int  # files at or before the mark
    others: set[str]  # complete entries that are not files to read (folders, unmatched, refused)
    after_ns: int
    late: dict[str, int]  # name -> arrival: the files at or before the mark that arrived after after_ns
    full_at: float  # when every file was last looked at (epoch s)

    def dump(self) -> str:
        return json.dumps({**asdict(self), "others": sorted(self.others)})

    @classmethod
    def load(cls, text: str | None) -> _Memo | None:
        try:
            data = json.loads(text) if text else None
            return None if data is None else cls(**{**data, "others": set(data["others"])})
        except (ValueError, TypeError, KeyError):
            return None  # unreadable: list whole, then store a new one


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
        local = local_folder(folder)
        if local is None:
            return [e for e in list_entries(folder, globs) if e.kind == "file" and e.arrived_ns > after_ns]
        key = (folder, globs)
        stored = self._stored(key)
        memo = self._memos.pop(key, None) or (_Memo.load(storage.read_text(stored)) if stored else None)
        usable = memo is not None and after_ns >= memo.after_ns and time.time() - memo.full_at < FULL_LISTING_S
        late = self._since_mark(local, globs, memo, after_ns) if memo is not None and usable else None
        if memo is None or late is None:
            memo, late = self._list_all(folder, globs, after_ns)
        if len(memo.others) <= MAX_OTHERS:
            memo.after_ns, memo.late = after_ns, {e.name: e.arrived_ns for e in late}
            self._memos[key] = memo
            if stored and len(late) <= MAX_STORED_LATE:
                storage.write_text(stored, memo.dump())
        return late

    def _list_all(self, folder: str, globs: tuple[str, ...], after_ns: int) -> tuple[_Memo, list[Entry]]:
        entries = [e for e in list_entries(folder, globs) if e.kind != "in_progress"]
        self.looked_at += len(entries)
        files = [e for e in entries if e.kind == "file"]
        others = {e.name for e in entries if e.kind != "file"}
        memo = _Memo(max((f.name for f in files), default=""), len(files), others, after_ns, {}, time.time())
        return memo, [f for f in files if f.arrived_ns > after_ns]

    def _since_mark(self, folder: Path, globs: tuple[str, ...], memo: _Memo, after_ns: int) -> list[Entry] | None:
        """The late files, looking at only the names after ``memo``'s mark that were not seen
        before (``memo`` updated); None when the files at or before the mark do not add up."""
        try:
            with os.scandir(folder) as scanned:
                names = [e for e in scanned if is_complete(e.name) and e.name not in memo.others]
        except FileNotFoundError:
            names = []
        late, after = [], []
        below = 0
        for entry in names:
            if entry.name > memo.mark:
                after.append(entry)
                continue
            below += 1
            arrived = memo.late.get(entry.name)
            if arrived is not None and arrived > after_ns:
                late.append(Entry(entry.name, "file", arrived))
        if below != memo.below:
            return None
        patterns = expand_globs(globs)
        new_files = []
        for entry in after:
            self.looked_at += 1
            found = local_entry(entry, folder, patterns, links_inside=False)
            if found is None:
                continue  # gone while listing
            if found.kind != "file":
                memo.others.add(found.name)
                continue
            new_files.append(found.name)
            if found.arrived_ns > after_ns:
                late.append(found)
        if new_files:
            memo.mark = max(new_files)
            memo.below += len(new_files)
        return late
