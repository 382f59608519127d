"""What a newcomer's terminal shows (issue 23): a bad data root is one sentence from
``generate`` and from ``dagster asset materialize``, and a successful run of the demo with a
folder nobody reads in its landing zone prints a short log, with a warning naming that folder
and no traceback. The commands run as a user types them, with the repository's instance config."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from devstack.dagster_dev import isolated_home
from lakehouse_assets.definitions import TABLES
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.paths import LakehousePaths
from verification.processes import run_bounded

REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).parent / "dagster")
MATERIALIZE = [DAGSTER, "asset", "materialize", "-m", "lakehouse_assets.definitions", "--select", "*"]
TRACE_MARKERS = ("Traceback", "Stack Trace", "\tat org.apache", "py4j")


def run(command: list[str], root: Path, home: Path, timeout: float = 600) -> tuple[int, list[str]]:
    env = {**os.environ, "LAKEHOUSE_ROOT": str(root), "DAGSTER_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_REMOTE", None)
    done = run_bounded(command, cwd=REPO, env=env, timeout=timeout)
    return done.returncode, (done.stdout + done.stderr).splitlines()


def ours(lines: list[str]) -> list[str]:
    """The lines that are not Dagster's notice that ``asset materialize`` is superseded by ``dg``."""
    return [ln for ln in lines if ln.strip() and "SupersessionWarning" not in ln and "return callback(" not in ln]


@pytest.mark.parametrize("kind", ["a file", "under a file"])
def test_an_unusable_root_is_one_sentence_from_generate_and_materialize(tmp_path: Path, kind: str) -> None:
    file = tmp_path / "not-a-folder"
    file.write_text("x")
    root = file if kind == "a file" else file / "lakehouse"
    home = isolated_home(tmp_path / "home")
    for command in ([sys.executable, "-m", "lakehouse_assets.generate"], MATERIALIZE):
        code, lines = run(command, root, home, timeout=120)
        assert code != 0, lines
        (line,) = ours(lines)
        assert f"LAKEHOUSE_ROOT={root}" in line and not any(m in line for m in TRACE_MARKERS), lines


@pytest.mark.slow
def test_a_demo_run_prints_a_short_log_and_warns_about_a_folder_nobody_reads(tmp_path: Path) -> None:
    root = tmp_path / "lakehouse"
    generate(LakehousePaths(str(root)), GeneratorOptions(files=2, rows=100, seed=5))
    hidden = root / "landing" / "events" / "late.jsonl"
    hidden.mkdir()
    (hidden / "part-0.jsonl").write_text('{"event_id": "in-a-folder"}\n')
    code, lines = run(MATERIALIZE, root, isolated_home(tmp_path / "home"))
    assert code == 0, "\n".join(lines[-40:])
    shown = ours(lines)
    assert len(shown) <= 30, "\n".join(shown)
    warnings = [ln for ln in shown if "late.jsonl" in ln]
    assert warnings and all("WARNING" in ln for ln in warnings), "\n".join(shown)
    assert not any(m in ln for ln in shown for m in TRACE_MARKERS), "\n".join(shown)
    # A line per table with its figures.
    assert sum(" rows read = " in ln for ln in shown) == len(TABLES), "\n".join(shown)
