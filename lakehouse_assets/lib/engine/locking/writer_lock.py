"""One writer per table, whatever the data root: what every writer of a table holds while it
writes (a run's query, nightly maintenance), chosen by the root's kind.

- a local root: an OS file lock (``fcntl``) per table, which every process on the machine
  honours (:func:`lakehouse_assets.lib.engine.state.storage.exclusive_lock`);
- ``s3a://``: a lease in the bucket, taken with a conditional write
  (:mod:`lakehouse_assets.lib.engine.locking.table_lease`), which every process anywhere honours;
- any other URI has no such mechanism here, and its writers are refused in one sentence rather
  than left to race.

``LAKEHOUSE_TABLE_LEASE=0`` leaves object storage to Dagster's pools alone (one instance).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Protocol

from lakehouse_assets.lib.engine.locking.lease_store import S3LeaseStore
from lakehouse_assets.lib.engine.locking.table_lease import OnWait, TableLease
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import Settings, current

LEASE_SCHEMES = ("s3a", "s3")


class WriterLock(Protocol):
    """How the writers of a table under one data root keep apart."""

    def hold(self, table: str, on_wait: OnWait | None = None, writer: str = "") -> AbstractContextManager[object]:
        """Hold the table while the block runs, waiting for another writer first if need be.

        :param table: the table.
        :param on_wait: called with no arguments (or ``holder=``, the other writer in words) when
            this writer has to wait, then with the seconds it waited.
        :param writer: who this writer is, for the messages of one that waits for it.
        """
        ...


@dataclass(frozen=True)
class LocalFileLock:
    """An OS lock file per table under a local root (``checkpoints/.locks/<table>.lock``)."""

    paths: LakehousePaths

    def hold(self, table: str, on_wait: OnWait | None = None, writer: str = "") -> AbstractContextManager[object]:
        return storage.exclusive_lock(self.paths.lock_file(table), on_wait)


@dataclass(frozen=True)
class ObjectStoreLease:
    """A lease per table in the bucket (``checkpoints/.locks/<table>/``)."""

    paths: LakehousePaths
    settings: Settings

    def hold(self, table: str, on_wait: OnWait | None = None, writer: str = "") -> AbstractContextManager[object]:
        bucket = self.paths.root.split("://", 1)[1].split("/", 1)[0]
        folder = f"{self.paths.checkpoint('.locks')}/{table}"
        return TableLease(S3LeaseStore(f"s3://{bucket}"), folder, table, self.settings, writer).held(on_wait)


@dataclass(frozen=True)
class PoolsOnly:
    """No lock of the framework's own (``LAKEHOUSE_TABLE_LEASE=0``): Dagster's pools only."""

    def hold(self, table: str, on_wait: OnWait | None = None, writer: str = "") -> AbstractContextManager[object]:
        return nullcontext()


@dataclass(frozen=True)
class Refusal:
    """A root where no writer can make sure it is the only one: every writer is refused."""

    root: str

    @contextmanager
    def hold(self, table: str, on_wait: OnWait | None = None, writer: str = "") -> Iterator[object]:
        scheme = self.root.split("://", 1)[0]
        raise LakehouseError(
            f"{table}: LAKEHOUSE_ROOT={self.root} is on {scheme}://, where the framework has no lease to make "
            "sure a table has one writer (only local folders and s3a:// have one), so the run was refused "
            "rather than risk two writers; set LAKEHOUSE_TABLE_LEASE=0 if Dagster's pools in one instance "
            "are the only writers."
        )
        yield  # pragma: no cover - a generator, for the context manager


def writer_lock(paths: LakehousePaths, settings: Settings | None = None) -> WriterLock:
    """The way writers of tables under ``paths`` keep apart (see the module's docstring).

    :param paths: the data root.
    :param settings: the lease's settings (default: the current ones).
    """
    settings = settings or current()
    if paths.is_local:
        return LocalFileLock(paths)
    if not settings.table_lease:
        return PoolsOnly()
    if paths.root.split("://", 1)[0] in LEASE_SCHEMES:
        return ObjectStoreLease(paths, settings)
    return Refusal(paths.root)
