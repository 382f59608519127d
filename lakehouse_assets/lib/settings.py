"""Where the lakehouse lives: the data root and the paths derived from it.

Everything is configuration with an embedded default for one machine: ``LAKEHOUSE_ROOT`` may be
a local path or a URI (``s3a://bucket/lakehouse``) so object storage can replace local disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _normalize_root(root: str) -> str:
    if "://" in root or root.startswith("file:"):
        return root.rstrip("/")
    return str(Path(root).expanduser().resolve())


@dataclass(frozen=True)
class LakehousePaths:
    """Paths of tables, checkpoints and landing folders under one data root."""

    root: str

    @classmethod
    def from_env(cls) -> LakehousePaths:
        return cls(_normalize_root(os.environ.get("LAKEHOUSE_ROOT") or str(REPO_ROOT / "data")))

    @property
    def is_local(self) -> bool:
        return "://" not in self.root or self.root.startswith("file:")

    def landing(self, source: str) -> str:
        return f"{self.root}/landing/{source}"

    def table(self, name: str) -> str:
        return f"{self.root}/tables/{name}"

    def checkpoint(self, name: str) -> str:
        return f"{self.root}/checkpoints/{name}"

    def lock_file(self, table: str) -> Path | None:
        """The OS lock every writer of ``table`` holds (local roots; None for object storage)."""
        return self.local_path(self.checkpoint(".locks")) / f"{table}.lock" if self.is_local else None

    def local_path(self, uri: str) -> Path:
        """The local filesystem path of a URI under a local root."""
        if not self.is_local:
            raise ValueError(f"{uri} is not on the local filesystem")
        return Path(uri.removeprefix("file://").removeprefix("file:"))


def allowed_lateness(default: str = "1 hour") -> str:
    """How late event-time data may arrive before watermarked queries drop it: the
    ``LAKEHOUSE_ALLOWED_LATENESS`` environment variable (a Spark interval such as ``2 hours``),
    read when the pipeline's definitions are imported, else ``default``."""
    return os.environ.get("LAKEHOUSE_ALLOWED_LATENESS") or default
