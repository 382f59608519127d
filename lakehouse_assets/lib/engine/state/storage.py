"""Small file operations on the data root through ``pyarrow.fs``: local paths and URIs alike,
from any process (a Spark Connect client has no JVM to ask)."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from pyarrow import fs as pafs

from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.object_store import pyarrow_s3_options


def _filesystem(scheme_and_authority: str) -> pafs.FileSystem:
    if scheme_and_authority.startswith("s3://"):
        # Settings are read per call (a test or reload may change them); the client is cached.
        return _s3(tuple(sorted(pyarrow_s3_options(current()).items())))
    return _from_uri(scheme_and_authority)


@lru_cache(maxsize=16)
def _from_uri(scheme_and_authority: str) -> pafs.FileSystem:
    filesystem, _ = pafs.FileSystem.from_uri(scheme_and_authority)
    return filesystem


@lru_cache(maxsize=4)
def _s3(options: tuple[tuple[str, Any], ...]) -> pafs.FileSystem:
    return pafs.S3FileSystem(**dict(options))


def resolve(path: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding ``path`` and the path within it. ``s3a://`` (Hadoop's name for
    S3) is read as ``s3://``."""
    if "://" not in path:
        return _filesystem("file:///"), str(Path(path.removeprefix("file:")).absolute())
    scheme, rest = path.split("://", 1)
    if scheme == "file":
        return _filesystem("file:///"), "/" + rest.lstrip("/")
    scheme = "s3" if scheme == "s3a" else scheme
    authority = rest.split("/", 1)[0]
    filesystem = _filesystem(f"{scheme}://{authority}")
    return filesystem, rest.rstrip("/")


def _info(path: str) -> tuple[pafs.FileSystem, str, pafs.FileInfo]:
    filesystem, inner = resolve(path)
    return filesystem, inner, filesystem.get_file_info(inner)


def exists(path: str) -> bool:
    return _info(path)[2].type != pafs.FileType.NotFound


def make_dirs(path: str) -> None:
    """Create the folder ``path`` (and its parents) unless it exists."""
    filesystem, inner = resolve(path)
    filesystem.create_dir(inner, recursive=True)


def delete(path: str) -> None:
    """Delete the file or folder ``path`` (nothing when it does not exist)."""
    filesystem, inner, info = _info(path)
    if info.type == pafs.FileType.Directory:
        filesystem.delete_dir(inner)
    elif info.type == pafs.FileType.File:
        filesystem.delete_file(inner)


def list_entries(path: str, recursive: bool = False) -> list[pafs.FileInfo]:
    """The entries under the folder ``path`` (empty when it does not exist)."""
    filesystem, inner, info = _info(path)
    if info.type != pafs.FileType.Directory:
        return []
    return filesystem.get_file_info(pafs.FileSelector(inner, recursive=recursive, allow_not_found=True))


def list_names(path: str) -> list[str]:
    """Names of the entries of the folder ``path`` (empty when it does not exist)."""
    return [entry.base_name for entry in list_entries(path)]


def read_text(path: str) -> str | None:
    data = read_bytes(path)
    return None if data is None else data.decode("utf-8")


def read_bytes(path: str) -> bytes | None:
    """The contents of the file ``path`` (None when it is not a file)."""
    filesystem, inner, info = _info(path)
    if info.type != pafs.FileType.File:
        return None
    # compression=None: the bytes as stored (pyarrow would gunzip a name ending in .gz).
    with filesystem.open_input_stream(inner, compression=None) as stream:
        return stream.read()


def write_text(path: str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: str, data: bytes) -> None:
    """Write the file ``path`` (its folder is created); on object storage, one PUT."""
    filesystem, inner = resolve(path)
    parent = inner.rsplit("/", 1)[0]
    if parent:
        filesystem.create_dir(parent, recursive=True)
    # compression=None: the bytes as given (pyarrow would gzip again a name ending in .gz).
    if not isinstance(filesystem, pafs.LocalFileSystem):  # one PUT: whole or nothing
        with filesystem.open_output_stream(inner, compression=None) as stream:
            stream.write(data)
        return
    # A local file is written beside and renamed over: a crash leaves the old file or the new.
    folder, name = inner.rsplit("/", 1)
    staged = f"{folder}/.{name}.{os.getpid()}.{threading.get_ident()}.tmp"  # a dot: listings skip it
    with filesystem.open_output_stream(staged, compression=None) as stream:
        stream.write(data)
    filesystem.move(staged, inner)


def move(source: str, target: str) -> None:
    """Move the file (or link) ``source`` to ``target``, creating ``target``'s folder; one
    rename on a local root, a copy then a delete on object storage.

    :raises FileNotFoundError: ``source`` does not exist.
    """
    filesystem, inner = resolve(source)
    _, target_inner = resolve(target)
    filesystem.create_dir(target_inner.rsplit("/", 1)[0], recursive=True)
    filesystem.move(inner, target_inner)


def move_beside(source: str, target: str) -> str:
    """Move the file ``source`` to ``target``, or beside it (``1-<name>``, ``2-<name>``...) when
    another file holds that name; the path used. Idempotent: a local move killed between its
    link and its unlink is finished (where a link is refused, a rename to a free name); on object storage (a copy, then a delete) a target of
    ``source``'s size is taken for an earlier copy of it.

    :raises FileNotFoundError: ``source`` does not exist.
    """
    filesystem, inner = resolve(source)
    folder, name = target.rsplit("/", 1)
    candidates = (f"{folder}/{k}-{name}" if k else target for k in range(10_000))  # lazy: one, as a rule
    if isinstance(filesystem, pafs.LocalFileSystem):
        os.makedirs(resolve(folder)[1], exist_ok=True)
        for candidate in candidates:
            path = resolve(candidate)[1]
            try:
                os.link(inner, path)
            except FileExistsError:
                if not os.path.samefile(inner, path):
                    continue
            except PermissionError:  # a link to another user's file refused (fs.protected_hardlinks)
                if os.path.lexists(path):
                    continue
                os.rename(inner, path)
                return candidate
            os.unlink(inner)
            return candidate
    else:
        size = filesystem.get_file_info(inner)
        if size.type == pafs.FileType.NotFound:
            raise FileNotFoundError(source)
        for candidate in candidates:
            there = filesystem.get_file_info(resolve(candidate)[1])
            if there.type == pafs.FileType.NotFound or there.size == size.size:
                move(source, candidate)
                return candidate
    raise FileExistsError(target)


@contextmanager
def exclusive_lock(lock_file: Path | None, on_wait: Any = None) -> Iterator[None]:
    """Hold an exclusive OS lock on ``lock_file`` (local data roots); None means no lock.

    Dagster's pools keep runs from writing one table at once; this lock also covers writers
    outside one Dagster instance (two CLIs with different ``DAGSTER_HOME``).
    """
    if lock_file is None:
        yield
        return
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait:
                on_wait()
            started = time.monotonic()
            fcntl.flock(handle, fcntl.LOCK_EX)
            if on_wait:
                on_wait(time.monotonic() - started)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
