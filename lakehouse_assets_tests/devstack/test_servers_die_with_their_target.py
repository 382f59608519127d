"""Local servers end with what started them: a process started through the supervisor dies with
its SIGKILLed starter (from the main thread or from a thread that already ended), and ``make
engine`` and ``make cluster`` SIGKILLed as a whole process group leave no server, JVM or
executor behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from devstack.ports import free_port, serving
from devstack.supervisor import start_process, stop_group

REPO = Path(__file__).resolve().parents[2]


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, start time, command line) of every live (not zombie) process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            found[int(entry.name)] = (int(fields[1]), fields[19], command)
    return found


def _descendants(root: int) -> dict[int, tuple[str, str]]:
    """pid -> (start time, command line) of ``root`` and everything below it."""
    processes = _processes()
    tree, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in processes and pid not in tree:
            tree[pid] = processes[pid][1:]
            frontier += [child for child, (parent, _, _) in processes.items() if parent == pid]
    return tree


def _survivors(snapshot: dict[int, tuple[str, str]]) -> list[str]:
    """The processes of ``snapshot`` still alive (the same pid and start time, not a zombie)."""
    processes = _processes()
    return [command for pid, (start, command) in snapshot.items() if pid in processes and processes[pid][1] == start]


def _eventually(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _wait_for(condition: Callable[[], bool], timeout: float, what: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        tail = log.read_text(errors="replace")[-3000:]
        assert process.poll() is None, f"{what}: the target exited with {process.returncode}:\n{tail}"
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f} s:\n{tail}"
        time.sleep(1)


def _make(target: str, log: Path, env: dict[str, str], *variables: str) -> subprocess.Popen[bytes]:
    """``make <target>`` in its own process group, as a terminal would run it."""
    env = {k: v for k, v in {**os.environ, **env}.items() if k not in ("SPARK_REMOTE", "SPARK_MASTER")}
    with open(log, "ab") as out:
        return subprocess.Popen(
            ["make", "--no-print-directory", target, *variables],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def _kill_target(make: subprocess.Popen[bytes]) -> dict[int, tuple[str, str]]:
    """SIGKILL the target's whole process group; every process under it beforehand."""
    before = _descendants(make.pid)
    os.killpg(make.pid, signal.SIGKILL)
    make.wait(30)
    return before


def test_a_started_process_dies_with_its_sigkilled_starter(tmp_path: Path) -> None:
    parent_code = textwrap.dedent(
        """
        import sys, threading, time
        from devstack.supervisor import start_process

        first = start_process(["sleep", "301"])
        from_thread = []
        worker = threading.Thread(target=lambda: from_thread.append(start_process(["sleep", "302"])))
        worker.start()
        worker.join()  # the thread that asked is gone; its child must not go with it
        print(first.pid, from_thread[0].pid, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 2, "the parent did not start its children"
        snapshot = {pid: _processes()[pid][1:] for pid in pids}
        time.sleep(1)
        assert len(_survivors(snapshot)) == 2, "a child died while its parent lived"
        parent.kill()
        parent.wait()
        assert _eventually(lambda: not _survivors(snapshot), 10), f"outlived their parent: {_survivors(snapshot)}"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


@pytest.mark.slow
def test_make_engine_sigkilled_leaves_no_server(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "make-engine.log"
    make = _make("engine", log, {"LAKEHOUSE_ENGINE_PORT": str(port)})
    try:
        _wait_for(lambda: serving(port), 180, f"make engine serving on port {port}", make, log)
        before = _kill_target(make)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
    assert any("SparkConnectServer" in command for _, command in before.values()), before

    def with_the_port() -> list[str]:
        return [c for _, _, c in _processes().values() if f"={port} " in c + " " or f" {port} " in c + " "]

    assert _eventually(lambda: not serving(port) and not with_the_port() and not _survivors(before), 60), (
        f"after 60 s: serving={serving(port)}, with the port: {with_the_port()}, survivors: {_survivors(before)}"
    )


APP = """
import sys, time
from pyspark.sql import SparkSession

spark = (SparkSession.builder.master(sys.argv[1]).appName("devstack-test")
         .config("spark.driver.memory", "512m").config("spark.executor.memory", "512m")
         .config("spark.cores.max", "1").config("spark.driver.host", "127.0.0.1").getOrCreate())
spark.range(100).count()
print("app: ran", flush=True)
time.sleep(600)
"""

ROLES = {
    "master": "org.apache.spark.deploy.master.Master",
    "worker": "org.apache.spark.deploy.worker.Worker",
    "executor": "CoarseGrainedExecutorBackend",
}


@pytest.mark.slow
def test_make_cluster_sigkilled_leaves_no_master_worker_or_executor(tmp_path: Path) -> None:
    port, web_port, log = free_port(), free_port(), tmp_path / "make-cluster.log"
    make = _make("cluster", log, {}, f"CLUSTER_ARGS=--port {port} --web-port {web_port} --cores 1 --memory 1g")
    driver: subprocess.Popen[bytes] | None = None
    try:
        _wait_for(lambda: "cluster: ready" in log.read_text(errors="replace"), 180, "make cluster ready", make, log)
        # An application on the cluster (this test's child, not the target's), so that the worker runs an executor.
        (tmp_path / "app.py").write_text(APP)
        app_log = tmp_path / "app.log"
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_MASTER")}
        env |= {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        with open(app_log, "ab") as out:
            driver = start_process(
                [sys.executable, str(tmp_path / "app.py"), f"spark://127.0.0.1:{port}"], env=env, log=out
            )
        _wait_for(
            lambda: "app: ran" in app_log.read_text(errors="replace"), 180, "the application's job", driver, app_log
        )
        before = _kill_target(make)
        ran = {role: sum(marker in c for _, c in before.values()) for role, marker in ROLES.items()}
        assert all(ran.values()), f"not every role ran under make cluster: {ran}"
        assert _eventually(lambda: not _survivors(before) and not serving(port), 60), (
            f"after 60 s: serving={serving(port)}, survivors: {_survivors(before)}"
        )
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
        stop_group(driver, 10)
