"""Running the pipeline in a child process group that can be killed at any instant."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAULT_HOOK = Path(__file__).resolve().parent / "fault_hook"
DAGSTER = str(Path(sys.executable).with_name("dagster"))


@dataclass
class Outcome:
    killed: bool
    returncode: int | None
    seconds: float
    output: str


def materialize_in_child(
    root: Path,
    selection: str,
    kill_after: float | None = None,
    fault: str | None = None,
    timeout: float = 900,
    run_config: dict | None = None,
    env: dict[str, str] | None = None,
    location: tuple[str, ...] = ("-m", "lakehouse_assets.definitions"),
) -> Outcome:
    """``dagster asset materialize`` of the code ``location`` (default: the demo) in its own
    process group; SIGKILL the whole group after ``kill_after`` seconds, or let ``fault``
    (``<table>:<point>``, a fault point of :mod:`lakehouse_assets.lib.engine.faults`) kill it
    at a precise instant."""
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    extra = env or {}
    env = {**os.environ, "LAKEHOUSE_ROOT": str(root / "lakehouse"), "DAGSTER_HOME": str(home), **extra}
    env.pop("TEST_KILL_AT", None)
    if fault:
        env["TEST_KILL_AT"] = fault
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAULT_HOOK), env.get("PYTHONPATH")]))
    config = ["--config-json", json.dumps(run_config)] if run_config else []
    log = root / "child.log"
    started = time.monotonic()
    with open(log, "ab") as out:
        child = subprocess.Popen(
            [DAGSTER, "asset", "materialize", *location, "--select", selection, *config],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        killed = False
        try:
            child.wait(timeout=kill_after if kill_after is not None else timeout)
        except subprocess.TimeoutExpired:
            if kill_after is None:
                os.killpg(child.pid, signal.SIGKILL)
                raise
            os.killpg(child.pid, signal.SIGKILL)
            killed = True
            child.wait()
        finally:
            _reap_group(child.pid)
    if child.returncode == -signal.SIGKILL:
        killed = True
    return Outcome(killed, child.returncode, time.monotonic() - started, log.read_text(errors="replace")[-4000:])


def _reap_group(pgid: int) -> None:
    """Kill whatever the child left in its group (the Spark JVM) and wait for it to go."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
