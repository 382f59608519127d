"""A class-data sharing (AppCDS) archive for the Spark driver JVM, built once at setup time.

A fresh run spends a good part of its first seconds loading and verifying ~20,000 classes of
Spark, Delta and their dependencies from jars. The JVM can instead map them, already parsed and
verified, from an archive written by an earlier run (``-XX:ArchiveClassesAtExit`` on JDK 13+,
``-XX:SharedArchiveFile`` to use it). :func:`build` (run by ``make setup``) writes it from a
training run: a module the pipeline names (``python -m <module> <archive path>``), which runs
the pipeline's typical work on a scratch data root and ends with :func:`stop_and_dump`.

The archive is only valid for the exact JVM and class path it was written with, so its file name
carries a key of both; a run whose key has no archive (another JDK, other jars, a cluster
master) simply starts without one. ``LAKEHOUSE_CLASS_ARCHIVE=0`` turns it off. Archives are
kept in the per-user cache (``~/.cache/lakehouse_assets/spark-cds/``), one folder per PySpark
installation (a virtualenv), never beside the installed package.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyspark

from lakehouse_assets.lib.settings import current, user_cache
from lakehouse_assets.lib.spark.child_python import child_python_path

DUMP_ENV = "LAKEHOUSE_CLASS_ARCHIVE_DUMP"  # set only in the training process
TRAINING_TIMEOUT_S = 900
OWNER = "PYSPARK"  # in each archive folder: the PySpark installation its archives are for


def _pyspark_dir() -> str:
    return str(Path(pyspark.__file__).parent)


def archive_dir() -> Path:
    """This virtualenv's folder of archives in the per-user cache: an archive holds its PySpark's
    paths, so each installation has its own folder and replacing one's archive leaves the others'."""
    return user_cache() / "spark-cds" / hashlib.sha256(_pyspark_dir().encode()).hexdigest()[:12]


def archive_path(jars: list[str]) -> Path:
    """Where the archive for this JVM, this PySpark and these driver jars lives."""
    java = shutil.which("java") or ""
    java_real = os.path.realpath(java) if java else ""
    java_stamp = f"{java_real}:{os.stat(java_real).st_mtime_ns}" if java_real else "none"
    # The JVM refuses an archive whose class path changed since it was written: a virtualenv
    # made again at the same path, or a jar downloaded again, gets a new archive.
    installed = str(Path(_pyspark_dir()) / "__init__.py")
    stamps = [
        f"{path}:{os.stat(path).st_mtime_ns if os.path.exists(path) else 'absent'}" for path in [installed, *jars]
    ]
    key = "\n".join([java_stamp, pyspark.__version__, *stamps])
    return archive_dir() / f"driver-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def driver_options(jars: list[str]) -> list[str]:
    """JVM flags for a local driver: write the archive (training) or use it when it exists."""
    settings = current()
    if not settings.class_archive:
        return []
    if settings.class_archive_dump:
        return [f"-XX:ArchiveClassesAtExit={settings.class_archive_dump}"]
    path = archive_path(jars)
    return [f"-XX:SharedArchiveFile={path}"] if path.exists() else []


def stop_and_dump() -> None:
    """End a training process: stop the session; the driver JVM then exits by itself when this
    process ends and closes its stdin (PySpark's own shutdown signal), which is when it writes
    the archive (a killed JVM writes nothing). :func:`build` waits for both."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if spark is not None:
        spark.stop()


def install(partial: Path, target: Path) -> bool:
    """Put a freshly written archive in place (dropping archives of earlier JVMs or jars)."""
    if not partial.exists() or partial.stat().st_size == 0:
        partial.unlink(missing_ok=True)
        return False
    partial.replace(target)
    for stale in target.parent.glob("driver-*.jsa"):
        if stale != target:
            stale.unlink(missing_ok=True)
    (target.parent / OWNER).write_text(_pyspark_dir())
    _drop_orphans(target.parent.parent)
    return True


def _drop_orphans(cache: Path) -> None:
    """Remove the archive folders of PySpark installations that no longer exist (a deleted
    virtualenv or clone): each archive is about 200 MiB."""
    for folder in cache.iterdir():
        owner = folder / OWNER
        if owner.is_file() and not Path(owner.read_text().strip()).is_dir():
            shutil.rmtree(folder, ignore_errors=True)


def build(training_module: str) -> int:
    """Write the archive for the current JVM and jars unless it exists; 1 when it could not be
    written (setup goes on: a missing archive only means slower JVM starts).

    :param training_module: a module run as ``python -m <module>`` with :data:`DUMP_ENV` set
        to the archive's path: it runs typical work on a scratch root, then calls
        :func:`stop_and_dump`.
    """
    from lakehouse_assets.lib.spark.jars import cached_jars

    target = archive_path(cached_jars())
    if target.exists():
        print(f"class archive: {target} (cached)")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    started = time.monotonic()
    print(f"class archive: one training run of {training_module} (about two minutes on 2 cores, once)...", flush=True)
    # An embedded driver (never a Spark Connect engine); a new session so a hang can be killed whole.
    # In this working directory, importing from where this process does: the training module may
    # live outside the installed package (a checkout's devstack.archive_training).
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    env |= {"SPARK_LOG_LEVEL": "ERROR", DUMP_ENV: str(partial), "PYTHONPATH": child_python_path(env)}
    command = [sys.executable, "-m", training_module]
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    ) as training:
        try:
            output, _ = training.communicate(timeout=TRAINING_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(training.pid, signal.SIGKILL)
            output = f"the training run took more than {TRAINING_TIMEOUT_S} s and was stopped"
    if training.returncode != 0 or not install(partial, target):
        partial.unlink(missing_ok=True)
        tail = output.strip().splitlines()[-5:]
        print(
            "class archive: not written, runs start without it (make setup tries again): " + " | ".join(tail),
            file=sys.stderr,
        )
        return 1
    size = target.stat().st_size / 2**20
    print(f"class archive: {target} ({size:,.0f} MiB) in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(build(sys.argv[1]))
