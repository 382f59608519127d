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
:mod:`lakehouse_assets.lib.engine.lease_decision`.
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
from typing import Protocol

from lakehouse_assets.lib.engine import storage
from lakehouse_assets.lib.engine.conditional_put import ConditionalWritesUnsupported, put_if_absent
from lakehouse_assets.lib.engine.lease_decision import (
    LeaseRecord,
    Sighting,
    Take,
    generations,
    next_step,
    object_name,
    still_held,
)
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.settings import Settings, current

OnWait = Callable[..., None]
# A store that cannot be reached for this long while a writer waits or starts fails the run.
UNREACHABLE_S = 60.0


class LeaseStore(Protocol):
    """The five object operations a lease needs; keys are URIs under the data root."""

    @property
    def name(self) -> str:
        """The store, in words (``s3://bucket``)."""
        ...

    def create(self, key: str, body: bytes) -> bool:
        """Write ``key`` only if absent (True: this call created it)."""
        ...

    def write(self, key: str, body: bytes) -> None: ...

    def read(self, key: str) -> bytes | None: ...

    def names(self, folder: str) -> list[str]: ...

    def delete(self, key: str) -> None: ...


@dataclass(frozen=True)
class S3LeaseStore:
    """Lease objects in an ``s3a://`` bucket: conditional creates signed here, the rest through
    :mod:`lakehouse_assets.lib.engine.storage` (``pyarrow.fs``)."""

    name: str

    def create(self, key: str, body: bytes) -> bool:
        bucket, _, inner = key.split("://", 1)[1].partition("/")
        return put_if_absent(current(), bucket, inner, body)

    def write(self, key: str, body: bytes) -> None:
        storage.write_bytes(key, body)

    def read(self, key: str) -> bytes | None:
        return storage.read_bytes(key)

    def names(self, folder: str) -> list[str]:
        return storage.list_names(folder)

    def delete(self, key: str) -> None:
        storage.delete(key)


_verified_stores: set[str] = set()


def _verify_conditional_writes(store: LeaseStore, key: str, body: bytes) -> None:
    """Once per store and process, right after creating ``key``: creating it again must fail,
    else the store ignores ``If-None-Match`` and no lease can keep writers apart there."""
    if store.name in _verified_stores:
        return
    if store.create(key, body):
        raise ConditionalWritesUnsupported(
            f"{store.name} ignored a conditional write (If-None-Match: * over an existing object succeeded), "
            "so the table lease cannot keep two writers apart there; set LAKEHOUSE_TABLE_LEASE=0 to rely on "
            "Dagster's pools only."
        )
    _verified_stores.add(store.name)


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
        """Raise :class:`LakehouseError` (one sentence) unless the run still holds the lease."""
        newest = _newest(self.store, self.folder, default_ttl_s=60.0)
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
        unreachable_since: float | None = None
        while True:
            try:
                newest = _newest(self.store, self.folder, default_ttl_s=self.ttl_s)
                step = next_step(newest, sighting, time.monotonic())
                if isinstance(step, Take):
                    mine = self._take(step.generation)
                    if mine is not None:
                        if announced is not None:
                            on_wait(time.monotonic() - started)
                        return mine
                    time.sleep(0.05)  # another writer took that generation: look again
                    continue
                unreachable_since = None
            except OSError as error:
                unreachable_since = unreachable_since or time.monotonic()
                if time.monotonic() - unreachable_since > UNREACHABLE_S:
                    raise LakehouseError(
                        f"{self.table}: the table's lease in {self.folder} could not be read or written for "
                        f"{UNREACHABLE_S:.0f} s ({error})."
                    ) from None
                time.sleep(self.poll_s)
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

    def _take(self, generation: int) -> LeaseRecord | None:
        """Create ``generation``; the record when this writer now holds the lease (None: another
        writer created it first, or a newer one exists, and this one stays out)."""
        since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        mine = LeaseRecord(
            generation, uuid.uuid4().hex, self.writer, socket.gethostname(), os.getpid(), since, self.ttl_s
        )
        body = mine.to_bytes()
        if not self.store.create(self._key(generation), body):
            return None
        try:
            _verify_conditional_writes(self.store, self._key(generation), body)
        except ConditionalWritesUnsupported:
            self.store.write(self._key(generation), mine.let_go().to_bytes())
            raise
        # The decision to create it was taken on a listing: a writer that slept through two
        # generations may recreate one that was forgotten. The newest generation is the lease.
        found = generations(self.store.names(self.folder))
        if found[-1] != generation:
            self.store.write(self._key(generation), mine.let_go().to_bytes())
            return None
        for old in (g for g in found if g < generation - 1):  # keep the one just superseded
            self.store.delete(self._key(old))
        return mine

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
