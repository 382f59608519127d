"""Runs that hand their tables to the warm Spark server (what ``make dev`` does) give the same
tables as runs with their own JVM, start no JVM themselves, and never use a stale server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.settings import REPO_ROOT
from lakehouse_assets.tools.devserver import free_port
from lakehouse_assets_tests.support.lakehouse import Lakehouse
from lakehouse_assets_tests.support.contract import assert_tables_match_landed_files
from lakehouse_assets_tests.support.crash import materialize_in_child

CHAIN = "bronze_events,bronze_events_quarantine,silver_events,silver_events_quarantine,gold_hourly_revenue"
JVM_BANNER = "log4j2-defaults.properties"  # printed by every Spark JVM as it starts


def _post(url: str, body: dict) -> tuple[int, str]:
    request = urllib.request.Request(f"{url}/run", data=json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.slow
def test_runs_through_the_warm_spark_server(tmp_path: Path, spark) -> None:
    root = tmp_path / "lakehouse"
    lh = Lakehouse(root, spark, None)  # type: ignore[arg-type] - only its tables are read
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LAKEHOUSE_ROOT": str(root), "SPARK_LOCAL_IP": "127.0.0.1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "lakehouse_assets.lib.orchestrate.warm_spark", "--tables", "lakehouse_assets.defs",
         "--port", str(port), "--once"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        start = datetime(2026, 11, 20, 10, tzinfo=UTC)
        for round_, files in enumerate((2, 1)):
            generate(lh.paths, GeneratorOptions(files=files, rows=150, seed=40 + round_, start=start), ["events"])
            run = materialize_in_child(tmp_path, CHAIN, env={"LAKEHOUSE_SPARK_SERVER": url})
            assert run.returncode == 0, run.output
            assert JVM_BANNER not in run.output, "the run started its own Spark JVM"
        log = (tmp_path / "child.log").read_text()
        assert log.count("running in the warm Spark server") == 6  # three tables, two runs
        assert_tables_match_landed_files(lh)

        # Another data root: refused, the server stays up (and the step would run in its own process).
        status, reason = _post(url, {"table": "bronze_events", "root": "/elsewhere", "code": _code(url)})
        assert status == 409 and "/elsewhere" in reason
        # Edited code: refused, and the server exits so that its supervisor restarts it fresh.
        status, reason = _post(url, {"table": "bronze_events", "root": str(root), "code": "stale"})
        assert status == 409 and "other code" in reason
        assert server.wait(60) == 3
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _code(url: str) -> str:
    for _ in range(60):
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.loads(response.read())["code"]
        except OSError:
            time.sleep(0.5)
    raise AssertionError("the warm Spark server did not answer")


def test_a_step_runs_in_its_own_process_when_no_server_answers(tmp_path: Path) -> None:
    from lakehouse_assets.lib.orchestrate.execution import TableRequest
    from lakehouse_assets.lib.settings import LakehousePaths
    from lakehouse_assets.lib.orchestrate.warm_spark import ServerUnavailable, remote_table_events

    request = TableRequest("bronze_events", frozenset({"bronze_events"}), frozenset())
    events = remote_table_events(f"http://127.0.0.1:{free_port()}", LakehousePaths(str(tmp_path)), request, print)
    with pytest.raises(ServerUnavailable, match="no warm Spark server"):
        next(events)
