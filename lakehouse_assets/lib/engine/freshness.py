"""How far behind what has landed each table is: the age of the oldest landed file whose rows it
does not hold yet, from what each landing folder holds and what each table's runs committed
(no table is read).

After every run that succeeds a table records, per landing folder that feeds it, the newest
arrival it holds everything up to (``_lakehouse/held/<table>.json``):

* for a folder it reads itself, the intake's cursor once a query read everything listed when
  it started (its high-water mark: the newest arrival of those files);
* for a table it streams from, that table's record as it was when the run started (the run's
  query reads at least what that table had committed when it wrote its record).

A table then waits for every file of those folders that arrived after its mark; how long the
oldest of them has waited is how far behind it is. Files set aside are not waited for (they
left the folder); lookups read as a snapshot and Kafka inputs are not counted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lakehouse_assets.lib.declare.check_kinds import CheckOutcome
from lakehouse_assets.lib.declare.inputs import LandingInput, inputs_of_kind
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.intake.admission import intake_folder
from lakehouse_assets.lib.engine.intake.late_files import LateFiles
from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger
from lakehouse_assets.lib.engine.reading.landing_names import landing_folder
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.paths import LakehousePaths


@dataclass(frozen=True)
class Mark:
    """What a table holds of one landing folder: every file that arrived up to ``held_ns``
    (-1: none yet), among those its ``globs`` match."""

    held_ns: int
    globs: tuple[str, ...]

    def meet(self, other: Mark) -> Mark:
        return Mark(min(self.held_ns, other.held_ns), tuple(dict.fromkeys(self.globs + other.globs)))


# landing folder -> what the table holds of it
Held = dict[str, Mark]


def held_path(paths: LakehousePaths, table: str) -> str:
    return f"{paths.root}/_lakehouse/held/{table}.json"


def late_files(paths: LakehousePaths) -> LateFiles:
    """Listings of the landing folders that keep what they saw under the data root, so each run's
    check and the sensor's ticks look at only what may be new since any of them last listed."""
    return LateFiles(f"{paths.root}/_lakehouse/late_files")


def read_held(paths: LakehousePaths, table: str) -> Held:
    """What ``table`` holds, per landing folder (empty: nothing recorded yet)."""
    text = storage.read_text(held_path(paths, table))
    data = json.loads(text) if text else {}
    return {folder: Mark(int(m["held_ns"]), tuple(m["globs"])) for folder, m in data.items()}


def _merge(held: Held, folder: str, mark: Mark) -> None:
    held[folder] = held[folder].meet(mark) if folder in held else mark


def upstream_held(paths: LakehousePaths, table: TableSpec) -> Held:
    """What the tables ``table`` streams from hold now: read before its query starts."""
    held: Held = {}
    for upstream in dict.fromkeys(table.streamed_tables):
        for folder, mark in read_held(paths, upstream).items():
            _merge(held, folder, mark)
    return held


def record_held(paths: LakehousePaths, table: TableSpec, upstream: Held) -> None:
    """After a run of ``table`` that succeeded: what it holds now (see the module's docstring).

    :param upstream: :func:`upstream_held`, read when the run started.
    """
    before = read_held(paths, table.name)
    held: Held = dict(upstream)
    for flow in table.flow_runs():
        for parameter, source in inputs_of_kind(flow.inputs, LandingInput).items():
            folder = landing_folder(paths, source)
            state = IntakeLedger(intake_folder(paths, flow, parameter)).load()
            if state.cursor is not None and state.drained == state.cursor.dump():
                held_ns = state.cursor.hwm
            else:
                held_ns = before[folder].held_ns if folder in before else -1
            _merge(held, folder, Mark(held_ns, (source.glob,)))
    data = {folder: {"held_ns": m.held_ns, "globs": list(m.globs)} for folder, m in held.items()}
    storage.write_text(held_path(paths, table.name), json.dumps(data, sort_keys=True))


def forget_held(paths: LakehousePaths, table: TableSpec) -> None:
    """A full refresh starts: the table holds nothing it can vouch for until its run succeeds."""
    storage.delete(held_path(paths, table.name))


@dataclass(frozen=True)
class Freshness:
    """How far behind a table is.

    :param behind_s: the age of the oldest landed file it does not hold (0: it holds all).
    :param waiting: per landing folder, how many files it does not hold yet.
    :param oldest: the oldest such file's name ("" when none).
    :param never_run: no run of the table has recorded what it holds.
    """

    behind_s: float
    waiting: dict[str, int] = field(default_factory=dict)
    oldest: str = ""
    never_run: bool = False


def feeding_folders(paths: LakehousePaths, table: str, tables: Sequence[TableSpec]) -> Held:
    """Every landing folder feeding ``table`` by the declarations (itself, or through the tables it
    streams from), nothing held: what a table no run has recorded waits for."""
    by_name = {t.name: t for t in tables}
    found: Held = {}
    seen: set[str] = set()
    stack = [table]
    while stack:
        spec = by_name.get(stack.pop())
        if spec is None or spec.name in seen:
            continue
        seen.add(spec.name)
        for flow in spec.flow_runs():
            for source in inputs_of_kind(flow.inputs, LandingInput).values():
                _merge(found, landing_folder(paths, source), Mark(-1, (source.glob,)))
        stack.extend(spec.streamed_tables)
    return found


# (landing folder, globs) -> its entries: one listing per folder for every table a caller judges.
Listings = dict[tuple[str, tuple[str, ...]], list]


def held_floors(paths: LakehousePaths, declared: Sequence[str] | None = None) -> dict[str, int]:
    """Per landing folder, the least any table holds of it (of those whose runs recorded one).

    Every listing asks :class:`LateFiles` for the files after this floor, not after its own
    table's mark: the memo a listing leaves then serves the next one whatever table it is for,
    and the floor only rises as the slowest table catches up.

    :param paths: the data root.
    :param declared: the tables to count (default: every table with a record, including any no
        longer declared, whose old mark then keeps the floor low: each listing is whole again).
    """
    names = declared
    if names is None:
        names = [
            n.removesuffix(".json") for n in storage.list_names(f"{paths.root}/_lakehouse/held") if n.endswith(".json")
        ]
    floors: dict[str, int] = {}
    for name in names:
        for folder, mark in read_held(paths, name).items():
            floors[folder] = min(floors.get(folder, mark.held_ns), mark.held_ns)
    return floors


def late_listings(
    paths: LakehousePaths, judged: Sequence[str], tables: Sequence[TableSpec], late: LateFiles
) -> Listings:
    """For :func:`freshness` of each table ``judged``: the files of each landing folder feeding
    them that arrived after the least any table holds of it, one listing per folder.

    :param paths: the data root.
    :param judged: the tables whose freshness is asked.
    :param tables: every declared table.
    :param late: the listings (which look at only what may be new since the last one).
    """
    held = held_floors(paths, [t.name for t in tables])
    floors: dict[tuple[str, tuple[str, ...]], int] = {}
    for table in judged:
        for folder, mark in (read_held(paths, table) or feeding_folders(paths, table, tables)).items():
            key = (folder, mark.globs)
            floors[key] = min(floors.get(key, mark.held_ns), mark.held_ns, held.get(folder, mark.held_ns))
    return {key: late.files(key[0], key[1], floor) for key, floor in floors.items()}


def freshness(
    paths: LakehousePaths,
    table: str,
    now_ns: int,
    declared: Held | None = None,
    listed: Listings | None = None,
    late: LateFiles | None = None,
    counted: Sequence[str] | None = None,
) -> Freshness:
    """How far behind what landed ``table`` is at ``now_ns`` (epoch ns, the clock arrivals use).

    :param declared: :func:`feeding_folders`, for a table no run has recorded (``never_run``):
        every file in them waits. Without it such a table is 0 s behind.
    :param listed: listings already made (and where this call's are kept), so tables fed by the
        same folder cost one listing of it.
    :param late: how a folder not listed yet is listed (default: :func:`late_files`).
    :param counted: the tables whose marks set the floor a listing starts from (default: every
        table with a record, :func:`held_floors`); give the declared ones, so that a table no
        longer declared does not keep every listing as old as its last run.
    """
    oldest_ns, oldest_name, waiting = None, "", {}
    held = read_held(paths, table)
    listed = {} if listed is None else listed
    floors: dict[str, int] | None = None
    for folder, mark in (held or declared or {}).items():
        key = (folder, mark.globs)
        if key not in listed:
            late = late or late_files(paths)
            floors = held_floors(paths, counted) if floors is None else floors
            listed[key] = late.files(folder, mark.globs, min(mark.held_ns, floors.get(folder, mark.held_ns)))
        arrived = [e for e in listed[key] if e.kind == "file" and e.arrived_ns > mark.held_ns]
        waiting[folder.removeprefix(f"{paths.root}/")] = len(arrived)
        for entry in arrived:
            if oldest_ns is None or entry.arrived_ns < oldest_ns:
                oldest_ns, oldest_name = entry.arrived_ns, entry.name
    behind = 0.0 if oldest_ns is None else max(0.0, (now_ns - oldest_ns) / 1e9)
    return Freshness(round(behind, 3), waiting, oldest_name, never_run=not held)


def caught_up(
    paths: LakehousePaths,
    table: str,
    max_behind_s: float,
    now_ns: int | None = None,
    declared: Held | None = None,
    listed: Listings | None = None,
    counted: Sequence[str] | None = None,
) -> CheckOutcome:
    """The outcome of ``caught_up_with_landing`` on ``table`` now (or at ``now_ns``); a table no
    run has recorded is judged by the files of ``declared`` (:func:`feeding_folders`); ``listed``
    and ``counted`` as for :func:`freshness`."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    found = freshness(paths, table, now_ns, declared, listed, counted=counted)
    metadata: dict[str, Any] = {
        "behind_s": found.behind_s,
        "max_behind_s": max_behind_s,
        "files_waiting": sum(found.waiting.values()),
    }
    if found.oldest:
        metadata["oldest_waiting"] = found.oldest
    if found.never_run:
        metadata["note"] = "no run of the table yet: every file landed in the folders feeding it waits"
    return CheckOutcome(found.behind_s <= max_behind_s, metadata)
