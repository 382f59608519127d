"""Small file operations on the data root through Hadoop's FileSystem, so URIs work too."""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession


def _fs(spark: SparkSession, path: str) -> tuple[Any, Any]:
    jvm = spark._jvm  # noqa: SLF001 - Hadoop FS has no Python API
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark._jsc.hadoopConfiguration()), hpath  # noqa: SLF001


def exists(spark: SparkSession, path: str) -> bool:
    fs, hpath = _fs(spark, path)
    return bool(fs.exists(hpath))


def make_dirs(spark: SparkSession, path: str) -> None:
    """Create the folder ``path`` (and its parents) unless it exists."""
    fs, hpath = _fs(spark, path)
    if not fs.exists(hpath):
        fs.mkdirs(hpath)


def delete(spark: SparkSession, path: str) -> None:
    fs, hpath = _fs(spark, path)
    if fs.exists(hpath):
        fs.delete(hpath, True)


def list_names(spark: SparkSession, path: str) -> list[str]:
    """Names of the entries of the folder ``path`` (empty when it does not exist)."""
    fs, hpath = _fs(spark, path)
    if not fs.exists(hpath):
        return []
    return [str(status.getPath().getName()) for status in fs.listStatus(hpath)]


def read_text(spark: SparkSession, path: str) -> str | None:
    fs, hpath = _fs(spark, path)
    if not fs.exists(hpath):
        return None
    stream = fs.open(hpath)
    try:
        return str(spark._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))  # noqa: SLF001
    finally:
        stream.close()


def write_text(spark: SparkSession, path: str, text: str) -> None:
    fs, hpath = _fs(spark, path)
    out = fs.create(hpath, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()


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
