"""Start and talk to ``dagster dev`` from scripts and tests (local, 127.0.0.1 only).

``DagsterDev`` runs ``dagster dev -h 127.0.0.1 -p <port> -w workspace.yaml`` from the repository
root in its own process group and stops the whole group (webserver, daemon, code server, run
processes and their JVMs) on exit, and the group ends with the Python process that started it
(:func:`devstack.supervisor.start_process`). With ``isolated=True`` it writes a ``dagster.yaml`` into a
temporary ``DAGSTER_HOME``: the repository's settings, which name no path, so everything the
instance stores goes there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from devstack import REPO_ROOT
from devstack.connect_server import ConnectServer
from devstack.ports import free_port
from devstack.supervisor import start_process, stop_group

IN_FLIGHT = ["QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"]
# A step's warning that it runs its table (or its checks) again after a passing engine fault.
TRIED_AGAIN = re.compile(r"trying .* again in \d+s")


def isolated_home(home: Path) -> Path:
    """A DAGSTER_HOME with the repository's dagster.yaml (it names no path: storage goes under
    ``home``); a dagster.yaml already there is kept."""
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        shutil.copyfile(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    return home


class DagsterDev:
    def __init__(
        self,
        root: str | Path | None = None,
        home: str | Path | None = None,
        port: int | None = None,
        isolated: bool = False,
        env: dict[str, str] | None = None,
        log_path: Path | None = None,
        engine: bool = False,
        location: tuple[str, ...] = ("-w", "workspace.yaml"),
    ):
        self.port = port or free_port()
        # As `make dev` does: runs are clients of a Spark Connect engine started beside dagster dev.
        self.engine: ConnectServer | None = ConnectServer(free_port()) if engine else None
        self.url = f"http://127.0.0.1:{self.port}"
        self._tmp = tempfile.TemporaryDirectory(prefix="dagster-home-") if isolated and home is None else None
        if self._tmp:
            home = isolated_home(Path(self._tmp.name))
        if home is None and not os.environ.get("DAGSTER_HOME"):
            home = isolated_home(REPO_ROOT / "data" / "dagster")  # as make does
        self.home = Path(home or os.environ["DAGSTER_HOME"])
        self.root = str(root) if root else None
        self.location = location
        self.env = env or {}
        self.log_path = log_path or (self.home / "dagster-dev.log")
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> DagsterDev:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 240) -> None:
        env = {**os.environ, "DAGSTER_HOME": str(self.home), **self.env}
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # Spark's driver binds to 127.0.0.1 only
        for threads in ("DAGSTER_GRPC_MAX_WORKERS", "DAGSTER_CODE_SERVER_MAX_WORKERS"):
            env.setdefault(threads, "16")  # watching sensor ticks hold threads (Makefile)
        if self.root:
            env["LAKEHOUSE_ROOT"] = self.root
        dagster = Path(sys.executable).parent / "dagster"
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the process; stop() closes it
        if self.engine:
            self.engine.log = self._log
            self.engine.start()
            env["SPARK_REMOTE"] = self.engine.url
        self.process = start_process(  # its own process group, stopped as a whole
            [str(dagster), "dev", "-h", "127.0.0.1", "-p", str(self.port), *self.location],
            cwd=REPO_ROOT, env=env, log=self._log,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dagster dev exited with {self.process.returncode}; see {self.log_path}")
            try:
                if self.graphql("{ version }").get("version") and self._location_loaded():
                    return
            except requests.RequestException:
                pass
            time.sleep(1)
        self.stop()
        raise TimeoutError(f"dagster dev did not come up on {self.url} in {timeout}s; see {self.log_path}")

    def _location_loaded(self) -> bool:
        data = self.graphql(
            "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus "
            "locationOrLoadError { __typename } } } } }"
        )
        entries = data["workspaceOrError"].get("locationEntries") or []
        return bool(entries) and all(
            e["loadStatus"] == "LOADED" and e["locationOrLoadError"]["__typename"] == "RepositoryLocation"
            for e in entries
        )

    def stop(self) -> None:
        """SIGINT (dagster dev shuts its children down), then SIGKILL whatever is left of the group."""
        if self.engine is not None:
            self.engine.stop()
        stop_group(self.process, 30, first=signal.SIGINT)
        self.process = None
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None
        if self._tmp:
            self._tmp.cleanup()
            self._tmp = None

    # -- GraphQL ------------------------------------------------------------------------------

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = requests.post(f"{self.url}/graphql", json={"query": query, "variables": variables or {}}, timeout=30)
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise RuntimeError(body["errors"])
        return body["data"]

    def runs(self, statuses: list[str] | None = None, limit: int = 100) -> list[dict[str, Any]]:
        data = self.graphql(
            """query Runs($filter: RunsFilter, $limit: Int) {
                 runsOrError(filter: $filter, limit: $limit) {
                   ... on Runs { results { runId jobName status tags { key value } startTime endTime } }
                 }
               }""",
            {"filter": {"statuses": statuses} if statuses else {}, "limit": limit},
        )
        return data["runsOrError"]["results"]

    def run_messages(self, run_id: str) -> list[str]:
        """The messages of a run's event log, in order."""
        data = self.graphql(
            """query Logs($id: ID!) {
                 logsForRun(runId: $id) { ... on EventConnection { events { ... on MessageEvent { message } } } }
               }""",
            {"id": run_id},
        )
        return [e.get("message") or "" for e in data["logsForRun"].get("events", [])]

    def wait_idle(self, timeout: float = 600, quiet: float = 0) -> None:
        """Wait until no run is queued or going (for at least ``quiet`` seconds)."""
        deadline = time.monotonic() + timeout
        idle_since: float | None = None
        while time.monotonic() < deadline:
            if self.runs(IN_FLIGHT, limit=1):
                idle_since = None
            else:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= quiet:
                    return
            time.sleep(1)
        raise TimeoutError(f"runs still in flight after {timeout}s: {self.runs(IN_FLIGHT)}")


def delta_versions(table_path: Path) -> list[tuple[int, float]]:
    """(version, commit time in epoch seconds) of a path-based Delta table, read from its log."""
    log = table_path / "_delta_log"
    if not log.is_dir():
        return []
    versions = []
    for entry in log.glob("*.json"):
        if not entry.stem.isdigit():
            continue
        committed = entry.stat().st_mtime
        try:
            for line in entry.read_text().splitlines():
                info = json.loads(line).get("commitInfo")
                if info and info.get("timestamp"):
                    committed = info["timestamp"] / 1000.0
                    break
        except (OSError, ValueError):
            pass
        versions.append((int(entry.stem), committed))
    return sorted(versions)
