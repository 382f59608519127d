"""A class-data sharing (AppCDS) archive for the Spark driver JVM, built once at setup time.

A fresh run spends a good part of its first seconds loading and verifying ~20,000 classes of
Spark, Delta and their dependencies from jars. The JVM can instead map them, already parsed and
verified, from an archive written by an earlier run (``-XX:ArchiveClassesAtExit`` on JDK 13+,
``-XX:SharedArchiveFile`` to use it). :func:`build` (run by ``make setup``) writes it from a
training run: a module the pipeline names (``python -m <module> <archive path>``), which runs
the pipeline's typical work on a scratch data root and ends with :func:`stop_and_dump`.

The archive is only valid for the exact JVM and class path it was written with, so its file name
carries a key of both; a run whose key has no archive (another JDK, other jars, a cluster
master) simply starts without one. ``LAKEHOUSE_CLASS_ARCHIVE=0`` turns it off.
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

from lakehouse_assets.lib.settings import REPO_ROOT, current

DUMP_ENV = "LAKEHOUSE_CLASS_ARCHIVE_DUMP"  # set only in the training process
TRAINING_TIMEOUT_S = 900


def archive_dir() -> Path:
    # In the clone, not the user cache: the archive holds this virtualenv's PySpark paths.
    return REPO_ROOT / ".cache" / "spark-cds"


def archive_path(jars: list[str]) -> Path:
    """Where the archive for this JVM, this PySpark and these driver jars lives."""
    java = shutil.which("java") or ""
    java_real = os.path.realpath(java) if java else ""
    java_stamp = f"{java_real}:{os.stat(java_real).st_mtime_ns}" if java_real else "none"
    key = "\n".join([java_stamp, pyspark.__version__, str(Path(pyspark.__file__).parent), *jars])
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
    return True


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
    # From the repository root, with it on PYTHONPATH: the training module may live outside the
    # installed package (devstack.archive_training).
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    python_path = [str(REPO_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env |= {"SPARK_LOG_LEVEL": "ERROR", DUMP_ENV: str(partial), "PYTHONPATH": os.pathsep.join(python_path)}
    command = [sys.executable, "-m", training_module]
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=REPO_ROOT,
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
