"""A file renamed into place with an old mtime must reach bronze, whatever its age.

The landing sensor notices such a file (see test_orchestration_sensors.py); Spark's file stream
source would then skip files whose mtime is older than ``maxFileAge`` (default 7 days) before
the newest file it has seen, so the framework reads landing folders with ``maxFileAge`` far
beyond any plausible age (``lib/runner.py``).
"""

from __future__ import annotations

import os

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # Spark binds to 127.0.0.1 only

import time

import pytest

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.paths import LakehousePaths
from verification.expected import ExpectedEvents


def land_with_old_mtime(lakehouse, tmp_path, age_days: float, seed: int) -> None:
    (staged,) = generate(
        LakehousePaths(str(tmp_path / f"producer{seed}")), GeneratorOptions(files=1, rows=50, seed=seed), ["events"]
    )
    old = time.time() - age_days * 24 * 3600
    os.utime(staged, (old, old))
    os.replace(staged, lakehouse.landing("events") / f"old-{seed}-{staged.name}")


def bronze_lines(lakehouse) -> int:
    return lakehouse.table("bronze_events").count() + lakehouse.table("bronze_events_quarantine").count()


@pytest.mark.parametrize("age_days", [2, 30, 3650])
def test_old_mtime_file_reaches_bronze(lakehouse, tmp_path, age_days: float) -> None:
    generate(lakehouse.paths, GeneratorOptions(files=1, rows=50, seed=1), ["events"])
    lakehouse.materialize("bronze_events")
    land_with_old_mtime(lakehouse, tmp_path, age_days, seed=2)
    lakehouse.materialize("bronze_events")
    expected = ExpectedEvents(lakehouse.root)
    assert bronze_lines(lakehouse) == sum(expected.lines_per_file.values())
