"""What the intake keeps per landing input, beside the table's checkpoint
(``<checkpoint>/_intake/<parameter>/``): ``state.json`` (the cursor of entries already vetted,
the cursor as of the last query that read everything, read failures per file, the files admitted
since that query and those it committed, the files schema evolution has yet to look at),
``set_aside.json`` (every file set aside, with its reason and what has been done about it) and,
for inputs whose files are deleted after a retention, ``committed/<YYYY-MM-DD>.json`` (the
files committed that day). Each is bounded by what is new (or by a day's files), not by the
folder's history: the cursor by its grace window, the lists by the files since the last run."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Literal

from lakehouse_assets.lib.engine.intake.cursor import LandingCursor
from lakehouse_assets.lib.engine.state import storage

# moving: recorded, not yet moved; moved: in _set_aside/, its quarantine row not yet written;
# recorded: its row written; retaken: moved back into the landing folder by the user's command.
SetAsideState = Literal["moving", "moved", "recorded", "retaken"]


@dataclass
class SetAside:
    """A file set aside: where it was, why, and what has been done about it.

    :param seq: its number among the input's set-aside files (the quarantine row's write id).
    :param name: its name in the landing folder.
    :param stored_as: its name in the folder's ``_set_aside/``.
    :param size: its size in bytes as stored.
    :param reason: why it cannot be taken in (one clause).
    :param at: when it was set aside (UTC, ISO 8601).
    :param planned: a micro-batch had planned it (Spark then never reads that name again, so
        taking it back in gives it a new one).
    :param state: see :data:`SetAsideState`.
    """

    seq: int
    name: str
    stored_as: str
    size: int
    reason: str
    at: str
    planned: bool = False
    state: SetAsideState = "moving"


@dataclass
class IntakeState:
    """The intake's cursor (entries already vetted), the cursor as of the last query that read
    everything (``drained``), read failures per file, the files admitted since that query
    (``admitted``) and those it committed that retention has yet to clean (``committed``), and
    the admitted files schema evolution has yet to look at (inputs whose schema is inferred)."""

    cursor: LandingCursor | None = None
    drained: str = ""
    attempts: dict[str, int] = field(default_factory=dict)
    unexamined: list[str] = field(default_factory=list)
    admitted: list[str] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)


_LISTS = ("unexamined", "admitted", "committed")


def safe_name(parameter: str) -> str:
    """A folder name for a parameter (which may be a path): the parameter where safe, else a
    sanitised form with a digest, still unique."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", parameter)
    return safe if safe == parameter else f"{safe}-{hashlib.sha1(parameter.encode()).hexdigest()[:8]}"


def intake_path(checkpoint: str, parameter: str) -> str:
    """Where the intake keeps the records of a landing input (``parameter``) of the flow whose
    checkpoint folder is ``checkpoint``."""
    return f"{checkpoint}/_intake/{safe_name(parameter)}"


class IntakeLedger:
    """The intake's records of one landing input, under ``folder``. Every call reads or writes
    the files anew: several parts of a run (the intake, schema evolution, the quarantine rows)
    each hold a ledger of the same input."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def load(self) -> IntakeState:
        text = storage.read_text(f"{self.folder}/state.json")
        if not text:
            return IntakeState()
        data = json.loads(text)
        cursor = LandingCursor.load(data["cursor"]) if data.get("cursor") else None
        attempts = {k: int(v) for k, v in data.get("attempts", {}).items()}
        lists = {name: list(data.get(name, [])) for name in _LISTS}
        return IntakeState(cursor, str(data.get("drained", "")), attempts, **lists)

    def save(self, state: IntakeState) -> None:
        data = {"cursor": state.cursor.dump() if state.cursor else "", "drained": state.drained}
        data |= {"attempts": state.attempts} | {name: getattr(state, name) for name in _LISTS}
        storage.write_text(f"{self.folder}/state.json", json.dumps(data, sort_keys=True))

    def records(self) -> list[SetAside]:
        """Every file set aside (and taken back), as recorded now."""
        text = storage.read_text(f"{self.folder}/set_aside.json")
        return [SetAside(**r) for r in json.loads(text)] if text else []

    def save_records(self, records: list[SetAside]) -> None:
        storage.write_text(f"{self.folder}/set_aside.json", json.dumps([asdict(r) for r in records], indent=1))

    def add(self, name: str, size: int, reason: str, planned: bool, taken: set[str]) -> SetAside:
        """Record ``name`` as being set aside (state ``moving``), under a stored name not in
        ``taken`` (the names already in ``_set_aside/``)."""
        records = self.records()
        seq = max((r.seq for r in records), default=0) + 1
        stored = name if name not in taken else f"{seq}-{name}"
        at = datetime.now(UTC).isoformat(timespec="seconds")
        record = SetAside(seq, name, stored, size, reason, at, planned)
        self.save_records([*records, record])
        return record

    def held(self) -> list[SetAside]:
        """The files set aside and not taken back in."""
        return [r for r in self.records() if r.state != "retaken"]

    def committed_on(self, day: str) -> list[str]:
        """The files whose rows were committed on ``day`` (``YYYY-MM-DD``), for ``delete``."""
        return list(json.loads(storage.read_text(f"{self.folder}/committed/{day}.json") or "[]"))

    def commit_days(self) -> list[str]:
        return sorted(n.removesuffix(".json") for n in storage.list_names(f"{self.folder}/committed"))

    def save_committed(self, day: str, names: list[str]) -> None:
        if names:
            storage.write_text(f"{self.folder}/committed/{day}.json", json.dumps(sorted(set(names))))
        else:
            storage.delete(f"{self.folder}/committed/{day}.json")
