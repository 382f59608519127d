"""Where the project's readers of a Delta table stand, for VACUUM: the oldest version of the table
any of them has yet to read, and the retention that keeps the files they need.

A reader is a table, or one of its flows, whose input is ``stream(t)`` or ``change_feed(t)``.
Its checkpoint's offsets say where it stands in ``t``: one line per source of its query, Delta's
being ``{"reservoirId", "reservoirVersion", "index", "isStartingVersion"}``, found by the table's
id. With ``reservoirVersion`` V, the reader's next micro-batch reads either the snapshot of
version V (``isStartingVersion`` true: its initial snapshot, read in parts) or the changes of
versions V and later (``index``: the last file of V already read, -1 none of them):

- the offset of its **last committed** batch is where its next batch starts, and where a planned
  but uncommitted batch starts when it is replayed;
- with no committed batch, its **planned batch 0** reads from its ``startingVersion`` option, else
  the snapshot of V (an offset inside the initial snapshot) or of V - 1 (one past it), as Delta's
  source does;
- a reader that **never ran** reads from its ``startingVersion`` (or ``startingTimestamp``)
  option, else the snapshot of the version it starts at: nothing older than the latest.

It needs every file a version from V on references: files added since, and files active at V
that a later commit (OPTIMIZE's compaction) removed. VACUUM deletes a removed file once its
removal is older than the retention, so a retention reaching back past V's commit time keeps
them (:func:`retention_keeping`). A reader whose offset is past the latest version has read
everything and holds nothing back. Readers outside the project are not known here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lakehouse_assets.lib.declare.inputs import TableInput, of_kind
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.state import delta_log, storage
from lakehouse_assets.lib.engine.state.checkpoint import query_checkpoint
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths

SAFETY_MARGIN_HOURS = 1
"""Added to the age of the oldest unread version: writers' clocks, a long transaction."""
_LATEST_TIME_ZONE_AHEAD = timedelta(hours=14)  # a naive starting timestamp is read in Spark's session zone


class ReaderPositionUnknown(LakehouseError):
    """Where a reader stands in the table cannot be told: VACUUM of the table is skipped, saying why."""


@dataclass(frozen=True)
class Reader:
    """A table or flow of the project reading ``source`` (a stream or change feed of the table)."""

    flow: TableSpec
    source: TableInput

    @property
    def name(self) -> str:
        return self.flow.name if self.flow.flow is None else f"{self.flow.name} (flow {self.flow.flow})"


@dataclass(frozen=True)
class Unread:
    """The oldest part of the table a reader has yet to read."""

    reader: str
    since_ms: int
    """Files removed from this instant on (ms since the epoch) must stay."""
    version: int | None
    """The version it reads from (None: from a starting timestamp)."""
    how: str
    """Where that position was read, for the maintenance report."""


@dataclass(frozen=True)
class _Start:
    version: int | None
    timestamp_ms: int | None
    how: str


def readers_of(tables: Sequence[TableSpec], name: str) -> list[Reader]:
    """The tables and flows among ``tables`` that read the table ``name`` as a stream or change feed.

    :param tables: every table of the project.
    :param name: the table read.
    """
    return [
        Reader(flow, source)
        for table in tables
        for flow in table.flow_runs()
        if not flow.once
        for source in of_kind(flow.inputs.values(), TableInput)
        if source.table == name and source.streaming
    ]


def _batch_ids(folder: str) -> list[int]:
    return sorted(int(n) for n in storage.list_names(folder) if n.isdigit())


def _starting_option(reader: Reader) -> _Start | None:
    """Where the reader's first batch starts by its options; None: at the latest version."""
    options = {k.lower(): str(v).strip() for k, v in reader.source.options.items()}
    version = options.get("startingversion", "")
    if version.isdigit():
        return _Start(int(version), None, f"its startingVersion option ({version})")
    stamp = options.get("startingtimestamp")
    if version or not stamp:
        return None  # "latest", or no option: the version it starts at
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        raise ReaderPositionUnknown(
            f"{reader.name}: its startingTimestamp option {stamp!r} is not an ISO date or timestamp"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC) - _LATEST_TIME_ZONE_AHEAD
    return _Start(None, int(moment.timestamp() * 1000), f"its startingTimestamp option ({stamp})")


def _table_offsets(text: str, table_id: str) -> tuple[list[dict], bool]:
    """The Delta source offsets in an offsets file that read the table ``table_id``, and
    whether some source of the query has no offset yet (``-``)."""
    found, void = [], False
    for line in text.strip().splitlines()[2:]:
        if line.strip() == "-":
            void = True
            continue
        try:
            offset = json.loads(line)
        except ValueError:
            continue
        if isinstance(offset, dict) and offset.get("reservoirId") == table_id:
            if not isinstance(offset.get("reservoirVersion"), int) or not isinstance(
                offset.get("isStartingVersion"), bool
            ):
                return [], False
            found.append(offset)
    return found, void


def _position(paths: LakehousePaths, reader: Reader, table: str, table_id: str) -> _Start | None:
    """Where the reader's next micro-batch starts reading ``table``; None: nothing older than the latest."""
    query = query_checkpoint(paths, reader.flow)
    planned = _batch_ids(f"{query}/offsets")
    if not planned:
        return _starting_option(reader)
    committed = _batch_ids(f"{query}/commits")
    batch = max(committed) if committed else min(planned)
    offsets, void = _table_offsets(storage.read_text(f"{query}/offsets/{batch}") or "", table_id)
    if not offsets:
        if void:
            return _starting_option(reader)
        raise ReaderPositionUnknown(
            f"{reader.name}: its checkpoint ({query}/offsets/{batch}) records no position in {table} (table id {table_id})"
        )
    first = min(offsets, key=lambda o: o["reservoirVersion"])
    if committed:
        return _Start(first["reservoirVersion"], None, f"the offset of its last committed batch, {batch}")
    option = _starting_option(reader)
    if option is not None:
        return option
    if "startingversion" in {k.lower() for k in reader.source.options}:
        raise ReaderPositionUnknown(
            f"{reader.name}: its planned batch {batch} starts at the version that was latest when it started"
        )
    start = first["reservoirVersion"] - (0 if first["isStartingVersion"] else 1)
    return _Start(start, None, f"its planned, uncommitted batch {batch}")


def oldest_unread(
    paths: LakehousePaths, table: str, table_path: str, table_id: str, readers: Sequence[Reader]
) -> Unread | None:
    """The oldest part of the table any reader has yet to read; None when every reader has read
    up to the latest version (or the table has no reader).

    :param paths: the data root (the readers' checkpoints).
    :param table: the table's name.
    :param table_path: where the table is.
    :param table_id: the Delta table's id (offsets name it).
    :param readers: the table's readers (:func:`readers_of`).
    :raises ReaderPositionUnknown: a reader's checkpoint cannot be read, or the version it reads
        from is no longer in the table's log (so it cannot be dated).
    """
    latest = delta_log.delta_version(table_path)
    found: list[Unread] = []
    for reader in readers:
        start = _position(paths, reader, table, table_id)
        if start is None:
            continue
        if start.version is None:
            found.append(Unread(reader.name, start.timestamp_ms or 0, None, start.how))
            continue
        if latest is None or start.version > latest:
            continue  # it has read every version
        committed = delta_log.commit_timestamp_ms(table_path, start.version)
        if committed is None:
            raise ReaderPositionUnknown(
                f"{reader.name} reads {table} from version {start.version} ({start.how}), which the "
                "table's log no longer holds, so it cannot be dated; a full refresh of the reader starts it anew"
            )
        found.append(Unread(reader.name, committed, start.version, start.how))
    return min(found, key=lambda unread: unread.since_ms, default=None)


def retention_keeping(configured_hours: int, unread: Unread | None, now_ms: int) -> int:
    """The VACUUM retention, in whole hours (Delta rounds the hours it is given), that keeps
    every file removed since the oldest unread version was committed: the configured one, or
    that version's age rounded up plus :data:`SAFETY_MARGIN_HOURS` when that is longer.

    :param configured_hours: the retention asked for.
    :param unread: the oldest part of the table a reader has yet to read (None: none).
    :param now_ms: now, in ms since the epoch.
    """
    if unread is None:
        return configured_hours
    age_hours = max(0, now_ms - unread.since_ms) / 3_600_000
    return max(configured_hours, math.ceil(age_hours) + SAFETY_MARGIN_HOURS)
