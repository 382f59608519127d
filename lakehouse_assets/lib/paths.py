"""Where a data root keeps each thing: landing folders, tables, checkpoints, the writers' locks."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from lakehouse_assets.lib.errors import RootUnusable
from lakehouse_assets.lib.settings import current, user_cache


@dataclass(frozen=True)
class LakehousePaths:
    """Paths of tables, checkpoints and landing folders under one data root."""

    root: str

    @classmethod
    def from_env(cls) -> LakehousePaths:
        return cls(current().root)

    @property
    def is_local(self) -> bool:
        return "://" not in self.root or self.root.startswith("file:")

    def landing(self, source: str) -> str:
        return f"{self.root}/landing/{source}"

    def table(self, name: str) -> str:
        return f"{self.root}/tables/{name}"

    def checkpoint(self, name: str) -> str:
        return f"{self.root}/checkpoints/{name}"

    def spark_state(self) -> Path:
        """Where Spark keeps this root's own state (the Derby metastore's home, the warehouse
        folder of catalog tables): ``<root>/_spark`` for a local root, so each project has its
        own; for a root on object storage, a folder of the per-user cache named by a hash of
        the root (Derby needs a local disk)."""
        if self.is_local:
            return self.local_path(self.root) / "_spark"
        return user_cache() / "spark-state" / hashlib.sha256(self.root.encode()).hexdigest()[:16]

    def check_root(self) -> None:
        """Raise :class:`RootUnusable` (one sentence) when a local root cannot hold the lakehouse:
        it is a file, cannot be created, or is not writable. Creates a missing one."""
        if not self.is_local:
            return
        path = self.local_path(self.root)
        if path.exists() and not path.is_dir():
            raise RootUnusable(
                f"LAKEHOUSE_ROOT={path} is a file, not a folder: point LAKEHOUSE_ROOT at a folder (it is created when missing)."
            )
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RootUnusable(
                f"LAKEHOUSE_ROOT={path} cannot be created: {(error.strerror or 'error').lower()} at {error.filename}."
            ) from None
        if not os.access(path, os.W_OK | os.X_OK):
            raise RootUnusable(f"LAKEHOUSE_ROOT={path} is not writable by this user.")

    def lock_file(self, table: str) -> Path | None:
        """The OS lock every writer of ``table`` holds (local roots; None for object storage)."""
        return self.local_path(self.checkpoint(".locks")) / f"{table}.lock" if self.is_local else None

    def local_path(self, uri: str) -> Path:
        """The local filesystem path of a URI under a local root."""
        if not self.is_local:
            raise ValueError(f"{uri} is not on the local filesystem")
        return Path(uri.removeprefix("file://").removeprefix("file:"))
