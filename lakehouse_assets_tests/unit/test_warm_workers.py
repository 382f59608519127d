"""The engine's Python launcher (lakehouse_assets.lib.accel.warm_workers) outside a Spark engine:
anything but a streaming worker runs the real interpreter, unchanged. Spark-free."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lakehouse_assets.lib.accel.warm_workers import launcher_path

pytestmark = pytest.mark.unit


def test_the_launcher_runs_anything_else_with_the_real_interpreter() -> None:
    launcher = launcher_path()
    assert launcher_path() == launcher  # written once per interpreter
    run = subprocess.run([launcher, "-c", "import sys; print(sys.executable); sys.exit(3)"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (run.returncode, run.stdout.strip()) == (3, sys.executable), run.stderr
    module = subprocess.run([launcher, "-m", "json.tool"], input='{"a": 1}', capture_output=True, text=True, timeout=60)
    assert module.returncode == 0 and '"a": 1' in module.stdout, module.stderr
