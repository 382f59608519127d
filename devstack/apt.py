"""Debian packages a local server or test needs (PostgreSQL, Chromium), installed with apt-get
when missing: as root only, never downloaded by a Python package."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

# One install at a time among our processes (parallel test workers may need PostgreSQL and
# Chromium at once); apt's own lock would make the second fail instead of wait.
LOCK = Path("/tmp/lakehouse-apt.lock")


def apt_install(packages: list[str], why: str) -> None:
    """``apt-get update`` and ``apt-get install`` of ``packages``.

    :param why: what needs them, for the error (``"PostgreSQL"``).
    :raises RuntimeError: one sentence: not root, no apt-get, or the step that failed and its output's end.
    """
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError(
            f"{why} is missing and cannot be installed here (needs root and apt-get): apt-get install {' '.join(packages)}"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait = ["-o", "DPkg::Lock::Timeout=600"]  # another apt-get running: wait for it
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for step in (["apt-get", *wait, "update", "-qq"], ["apt-get", *wait, "install", "-y", "-qq", *packages]):
            done = subprocess.run(step, env=env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                raise RuntimeError(f"could not install {why} with {' '.join(step)}: {done.stderr.strip()[-500:]}")
