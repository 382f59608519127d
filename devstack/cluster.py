"""A Spark standalone cluster on this machine: one master and one worker on 127.0.0.1, from
pyspark's own distribution (its ``bin/spark-class``; the pip package has no ``sbin/``).

    python -m devstack.cluster [--port 7077] [--cores 2] [--memory 2g]   (make cluster)

runs one in the foreground and prints the master's ``spark://`` URL; ``make engine
SPARK_MASTER=spark://127.0.0.1:7077`` then runs the Connect engine's jobs on it. The worker's
executors get Delta's, Kafka's and S3's jars from the engine (``spark.jars``), so nothing is
installed on the worker; a worker on another machine needs the same Python only for Python UDFs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pyspark

from devstack.ports import free_port, serving
from devstack.supervisor import kill_group, serve_in_foreground, start_process, stop_group, wait_until
from lakehouse_assets.lib.settings import current

SPARK_HOME = Path(pyspark.__file__).parent


class StandaloneCluster:
    """A master and one worker, each in its own process group (the worker's executors in its),
    each ending when the Python process that started them ends.

    :param port: the master's port (default: a free one).
    :param cores: the worker's cores.
    :param memory: the worker's memory for executors (``2g``).
    :param work_dir: the worker's folder for executor files (default: a temporary one).
    """

    def __init__(
        self, port: int | None = None, cores: int = 2, memory: str = "2g", work_dir: Path | None = None,
        web_port: int | None = None,
    ) -> None:  # fmt: skip
        self.port = port or free_port()
        self.web_port = web_port or free_port()
        self.cores = cores
        self.memory = memory
        self._tmp = tempfile.TemporaryDirectory(prefix="lakehouse-cluster-")
        self.work_dir = work_dir or Path(self._tmp.name) / "work"
        self.master: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": current().spark_local_ip,
               "SPARK_DAEMON_MEMORY": "512m", "PYSPARK_PYTHON": sys.executable}  # fmt: skip
        with open(Path(self._tmp.name) / f"{name}.log", "ab") as log:  # the child keeps its own descriptor
            return start_process([str(SPARK_HOME / "bin" / "spark-class"), *args], env=env, log=log)

    def alive_workers(self) -> int:
        """Workers the master counts as alive (its web UI's JSON)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=5) as response:
                return int(json.load(response).get("aliveworkers", 0))
        except (OSError, ValueError):  # not serving yet, or an empty page while the UI starts
            return 0

    def start(self, timeout: float = 90) -> StandaloneCluster:
        if serving(self.port):
            self.close()
            raise RuntimeError(f"port {self.port} is already in use; choose another master port")
        self.master = self._spawn(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.web_port),
        )  # fmt: skip
        self._wait(lambda: serving(self.port), timeout, "the master to serve")
        self.start_worker(timeout)
        return self

    def start_worker(self, timeout: float = 90) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.worker = self._spawn(
            "worker", "org.apache.spark.deploy.worker.Worker",
            "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
            "--work-dir", str(self.work_dir), "--webui-port", str(free_port()), self.url,
        )  # fmt: skip
        self._wait(lambda: self.alive_workers() >= 1, timeout, "the worker to register")

    def kill_worker(self) -> None:
        """SIGKILL the worker and its executors (a machine lost)."""
        kill_group(self.worker)
        self.worker = None

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        try:
            wait_until(
                ready, [self.master, self.worker], timeout=timeout, what=f"the Spark cluster (waiting for {what})"
            )
        except (RuntimeError, TimeoutError) as error:
            logs = self._log_tail()
            self.close()
            raise RuntimeError(f"{error}:\n{logs}") from None

    def _log_tail(self, lines: int = 15) -> str:
        return "\n".join(
            line
            for log in sorted(Path(self._tmp.name).glob("*.log"))
            for line in log.read_text(errors="replace").splitlines()[-lines:]
        )

    def stop(self) -> None:
        for process in (self.worker, self.master):
            stop_group(process, 20)
        self.worker = self.master = None

    def close(self) -> None:
        self.stop()
        self._tmp.cleanup()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a Spark standalone master and worker in the foreground.")
    parser.add_argument("--port", type=int, default=7077, help="the master's port")
    parser.add_argument("--web-port", type=int, default=None, help="the master's web UI port (default: a free one)")
    parser.add_argument("--cores", type=int, default=2, help="the worker's cores")
    parser.add_argument("--memory", default="2g", help="the worker's memory for executors")
    parser.add_argument("--url-file", help="write the master's URL here once the worker registered (for make dev)")
    args = parser.parse_args(argv)
    cluster = StandaloneCluster(args.port, args.cores, args.memory, web_port=args.web_port)
    print(f"cluster: starting a master on {cluster.url} and a worker ({args.cores} cores, {args.memory})", flush=True)
    return serve_in_foreground(
        "cluster", cluster.start, cluster.close, lambda: cluster.url + "\n",
        lambda: f"ready (master UI http://127.0.0.1:{cluster.web_port}); run the engine on it with\n"
                f"  make engine SPARK_MASTER={cluster.url}",
        args.url_file,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
