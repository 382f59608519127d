"""One writer per table on object storage, across processes, machines and Dagster instances: a
lease in the bucket itself, beside the checkpoints (``checkpoints/.locks/<table>/``).

A writer takes the lease by creating its next generation with S3's conditional write
(``If-None-Match: *``): of two writers creating one generation, exactly one succeeds. It renews
the lease every third of ``LAKEHOUSE_TABLE_LEASE_SECONDS`` while it writes and marks it released
at the end. A waiting writer says so, looks again every second or so, and takes the next
generation once the lease is released, or has stayed unrenewed for its whole duration (its holder
was killed); after ``LAKEHOUSE_TABLE_LEASE_WAIT_SECONDS`` it fails, naming the holder.

Fencing: each micro-batch checks, before it writes, that its run's generation is still the
newest (:class:`Fence`), so a writer whose lease expired under it (a stalled process) does not
commit after the next writer took over. The decisions are in
:mod:`lakehouse_assets.lib.engine.locking.lease_decision`.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from lakehouse_assets.lib.engine.locking.conditional_put import ConditionalWritesUnsupported
from lakehouse_assets.lib.engine.locking.lease_decision import (
    LeaseRecord,
    Sighting,
    Take,
    Wait,
    generations,
    next_step,
    object_name,
    still_held,
)
from lakehouse_assets.lib.engine.locking.lease_store import LeaseStore, verify_conditional_writes
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.settings import Settings

OnWait = Callable[..., None]
_T = TypeVar("_T")
_R = TypeVar("_R")
# A store that cannot be reached for this long while a writer waits or starts fails the run.
UNREACHABLE_S = 60.0


@dataclass(frozen=True)
class Fence:
    """What a micro-batch checks before it writes: its run still holds the table's lease.
    Picklable, so a ``foreachBatch`` handler running in a Spark Connect server's Python worker
    carries it there.

    :param store: where the lease is.
    :param folder: the lease's folder.
    :param table: the table, for the message.
    :param generation: the generation the run holds.
    :param token: the run's token in it.
    """

    store: LeaseStore
    folder: str
    table: str
    generation: int
    token: str

    def check(self) -> None:
        """Raise :class:`LakehouseError` (one sentence) unless the run still holds the lease. A
        store that cannot be reached is asked again for up to ``UNREACHABLE_S`` (a restarting
        server, which Spark's own S3 client rides out too)."""
        failing_since: float | None = None
        while True:
            try:
                newest = _newest(self.store, self.folder, 60.0)
                break
            except OSError:
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since > UNREACHABLE_S:
                    raise
                time.sleep(1.0)
        if not still_held(newest, self.generation, self.token):
            by = newest.describe() if newest is not None and not newest.released else "no writer"
            raise LakehouseError(
                f"{self.table}: this run no longer holds the table's lease (now held by {by}; a lease not "
                "renewed within LAKEHOUSE_TABLE_LEASE_SECONDS expires), so its micro-batch was not written; "
                "the next run goes on from the checkpoint."
            )


_held: ContextVar[Fence | None] = ContextVar("lakehouse_table_lease", default=None)


def current_fence(table: str) -> Fence | None:
    """The fence of the lease this thread holds on ``table`` (None: no lease, e.g. a local root)."""
    fence = _held.get()
    return fence if fence is not None and fence.table == table else None


def _newest(store: LeaseStore, folder: str, default_ttl_s: float) -> LeaseRecord | None:
    """The newest generation in ``folder`` (None when there is none)."""
    for _ in range(3):
        found = generations(store.names(folder))
        if not found:
            return None
        data = store.read(f"{folder}/{object_name(found[-1])}")
        if data is not None:
            return LeaseRecord.from_bytes(found[-1], data, default_ttl_s)
    raise OSError(f"the newest generation of the lease in {folder} vanished while it was read")


class TableLease:
    """The lease of one table: :meth:`held` takes it (waiting while another writer holds it),
    renews it in a thread, and lets go of it at the end.

    :param store: the object store holding the lease.
    :param folder: the lease's folder (``<root>/checkpoints/.locks/<table>``).
    :param table: the table, for messages.
    :param settings: the lease's duration and the bound of a wait.
    :param writer: who writes, for a waiting writer's messages (a Dagster run).
    """

    def __init__(self, store: LeaseStore, folder: str, table: str, settings: Settings, writer: str = "") -> None:
        self.store, self.folder, self.table, self.writer = store, folder, table, writer
        self.ttl_s, self.wait_s = settings.table_lease_s, settings.table_lease_wait_s
        self.poll_s = min(1.0, self.ttl_s / 10)

    @contextmanager
    def held(self, on_wait: OnWait | None = None) -> Iterator[Fence]:
        """Hold the lease while the block runs; ``on_wait()`` (with ``holder=`` the holder in
        words) when this writer has to wait, ``on_wait(seconds)`` once it got the lease after waiting."""
        mine = self._acquire(on_wait or (lambda *a, **k: None))
        fence = Fence(self.store, self.folder, self.table, mine.generation, mine.token)
        stop, latest = threading.Event(), [mine]
        renewer = threading.Thread(target=self._renew, args=(latest, stop), name=f"lease-{self.table}", daemon=True)
        renewer.start()
        token = _held.set(fence)
        try:
            yield fence
        finally:
            _held.reset(token)
            stop.set()
            renewer.join()
            with suppress(OSError):  # unreachable: the lease expires after ttl_s unrenewed
                self.store.write(self._key(mine.generation), latest[0].let_go().to_bytes())

    def _key(self, generation: int) -> str:
        return f"{self.folder}/{object_name(generation)}"

    def _acquire(self, on_wait: OnWait) -> LeaseRecord:
        started = time.monotonic()
        sighting: Sighting | None = None
        announced: str | None = None
        while True:
            step = self._reachable(self._look, sighting)
            if isinstance(step, Take):
                mine = LeaseRecord(
                    step.generation, uuid.uuid4().hex, self.writer, socket.gethostname(), os.getpid(),
                    datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), self.ttl_s,
                )  # fmt: skip
                if self._reachable(self._take, mine):
                    if announced is not None:
                        on_wait(time.monotonic() - started)
                    return mine
                time.sleep(0.05)  # another writer took that generation: look again
                continue
            if step.holder.token != announced:
                on_wait(holder=step.holder.describe())
                announced = step.holder.token
            waited = time.monotonic() - started
            if waited >= self.wait_s:
                raise LakehouseError(
                    f"{self.table}: gave up after waiting {waited:.0f} s (LAKEHOUSE_TABLE_LEASE_WAIT_SECONDS) for "
                    f"the writer holding this table's lease, {step.holder.describe()}."
                )
            sighting = step.sighting
            time.sleep(self.poll_s)

    def _reachable(self, attempt: Callable[[_T], _R], argument: _T) -> _R:
        """``attempt(argument)``, tried again while the store cannot be reached, for up to
        ``UNREACHABLE_S`` (a restarting server); then one sentence."""
        failing_since: float | None = None
        while True:
            try:
                return attempt(argument)
            except OSError as error:
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since > UNREACHABLE_S:
                    raise LakehouseError(
                        f"{self.table}: the table's lease in {self.folder} could not be read or written for "
                        f"{UNREACHABLE_S:.0f} s ({error})."
                    ) from None
                time.sleep(self.poll_s)

    def _look(self, sighting: Sighting | None) -> Take | Wait:
        return next_step(_newest(self.store, self.folder, self.ttl_s), sighting, time.monotonic())

    def _take(self, mine: LeaseRecord) -> bool:
        """Create ``mine``'s generation: True when this writer now holds the lease (False: another
        writer created it first, or a newer one exists, and this one stays out). Tried again
        after a lost answer, it recognises its own object by the token."""
        key, body = self._key(mine.generation), mine.to_bytes()
        if not self.store.create(key, body):
            existing = self.store.read(key)
            if existing is None or LeaseRecord.from_bytes(mine.generation, existing, self.ttl_s).token != mine.token:
                return False
        try:
            verify_conditional_writes(self.store, key, body)
        except ConditionalWritesUnsupported:
            self.store.write(key, mine.let_go().to_bytes())
            raise
        # The decision to create it was taken on a listing: a writer that slept through two
        # generations may recreate one that was forgotten. The newest generation is the lease.
        found = generations(self.store.names(self.folder))
        if found[-1] != mine.generation:
            self.store.write(key, mine.let_go().to_bytes())
            return False
        for old in (g for g in found if g < mine.generation - 1):  # keep the one just superseded
            self.store.delete(self._key(old))
        return True

    def _renew(self, latest: list[LeaseRecord], stop: threading.Event) -> None:
        """Renew the lease every third of its duration until ``stop``; ``latest[0]`` is the
        record as last written."""
        while not stop.wait(self.ttl_s / 3):
            renewed = latest[0].renewed()
            try:
                self.store.write(self._key(renewed.generation), renewed.to_bytes())
            except OSError:
                continue  # unreachable for now: the next renewal tries again within the lease
            latest[0] = renewed
