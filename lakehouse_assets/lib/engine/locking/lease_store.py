"""Where a table lease is kept: the object operations it needs (:class:`LeaseStore`), their
``s3a://`` implementation, and the check that a store honours conditional writes at all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from lakehouse_assets.lib.engine.locking.conditional_put import ConditionalWritesUnsupported, put_if_absent
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.settings import current


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
    :mod:`lakehouse_assets.lib.engine.state.storage` (``pyarrow.fs``)."""

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


def verify_conditional_writes(store: LeaseStore, key: str, body: bytes) -> None:
    """Once per store and process, right after creating ``key``: creating it again must fail,
    else the store ignores ``If-None-Match`` and no lease can keep writers apart there.

    :param store: the store.
    :param key: an object this process just created there.
    :param body: its content (written again, unchanged, if the store ignores the condition).
    :raises ConditionalWritesUnsupported: the store ignores the condition.
    """
    if store.name in _verified_stores:
        return
    if store.create(key, body):
        raise ConditionalWritesUnsupported(
            f"{store.name} ignored a conditional write (If-None-Match: * over an existing object succeeded), "
            "so the table lease cannot keep two writers apart there; set LAKEHOUSE_TABLE_LEASE=0 to rely on "
            "Dagster's pools only."
        )
    _verified_stores.add(store.name)
