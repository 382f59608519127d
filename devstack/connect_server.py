"""The Spark Connect server ("the engine") for make targets, tests and benches: the framework's
launch (:func:`lakehouse_assets.lib.spark.connect_server.connect_server_command`) started,
watched and stopped through :mod:`devstack.supervisor`.

    python -m devstack.connect_server [--port 15002] [--master spark://host:7077]   (make engine)

runs it in the foreground, prints its ``sc://`` URL once it serves, and starts it again when it
dies on its own. :class:`ConnectServer` starts and stops one from tests and scripts. Every
engine requires the token in ``LAKEHOUSE_ENGINE_TOKEN_FILE``, written when missing
(:mod:`lakehouse_assets.lib.spark.engine_auth`); the project's clients read it from there.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

from devstack import REPO_ROOT
from devstack.ports import serving
from devstack.supervisor import kill_group, serve_in_foreground, start_process, stop_group, wait_until_serving
from lakehouse_assets.lib.engine.state.catalog import register_tables
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.connect_server import connect_server_command, connect_server_env
from lakehouse_assets.lib.spark.engine_auth import engine_token, token_file
from lakehouse_assets.lib.spark.session import engine_session


class ConnectServer:
    """A Connect server in its own process group, ending with the Python process that started it.

    :param port: the port to serve on.
    :param master: the Spark master (default ``SPARK_MASTER``, ``local[*]``).
    :param log: where the server's output goes (default: this process's output).
    :param conf: Spark settings over the project's (static ones too, such as the warehouse folder).
    """

    def __init__(
        self, port: int, master: str | None = None, log: IO[bytes] | None = None, conf: dict[str, str] | None = None
    ) -> None:
        self.port = port
        self.master = master
        self.log = log
        self.conf = conf
        self.process: subprocess.Popen[bytes] | None = None
        self._private: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        return f"sc://{current().spark_local_ip}:{self.port}"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def start(self, timeout: float = 180) -> ConnectServer:
        self._private = tempfile.TemporaryDirectory(prefix="lakehouse-engine-")  # mode 0700
        secrets_file = Path(self._private.name) / "secrets.properties"
        try:
            command = connect_server_command(self.port, self.master, self.conf, secrets_file)
            env = connect_server_env(self.master, engine_token())
            self.process = start_process(command, env=env, cwd=REPO_ROOT, log=self.log)
            wait_until_serving(
                self.port, self.process, timeout=timeout, what="the Spark Connect server", host=current().spark_local_ip
            )
        except BaseException:
            self.stop()
            raise
        secrets_file.unlink(missing_ok=True)  # spark-submit read it at launch
        return self

    def kill(self) -> None:
        """SIGKILL the server and its Python workers (an engine crash)."""
        if self.process is not None and self.process.poll() is None:
            kill_group(self.process)

    def stop(self) -> None:
        stop_group(self.process, 30)
        self.process = None
        if self._private is not None:
            self._private.cleanup()
            self._private = None

    def __enter__(self) -> ConnectServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def name_tables(url: str) -> None:
    """Register every table under the data root in the engine's catalog, so its clients find
    them by name from the start; a failure is one line, not a failed engine."""
    paths = LakehousePaths.from_env()
    try:
        session = engine_session(url)
        try:
            added = register_tables(session, paths, warn=lambda note: print(f"engine: {note}", file=sys.stderr))
        finally:
            session.stop()
    except Exception as error:  # noqa: BLE001 - the engine serves without names too
        print(
            f"engine: tables under {paths.root} not registered by name: {str(error).splitlines()[0][:300]}",
            file=sys.stderr,
        )
        return
    if added:
        print(f"engine: {len(added)} tables under {paths.root} registered by name", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the Spark Connect engine in the foreground.")
    parser.add_argument(
        "--port", type=int, default=current().engine_port, help="port to serve on (LAKEHOUSE_ENGINE_PORT)"
    )
    parser.add_argument("--master", default=None, help="Spark master (SPARK_MASTER; default local[*])")
    args = parser.parse_args(argv)
    if serving(args.port, current().spark_local_ip):
        print(f"engine: port {args.port} is already in use; set LAKEHOUSE_ENGINE_PORT to another port", file=sys.stderr)
        return 1
    server = ConnectServer(args.port, args.master, log=None)
    print(f"engine: starting Spark Connect on {server.url} (Ctrl-C stops it)", flush=True)
    return serve_in_foreground(
        "engine", lambda: (server.start(), name_tables(server.url)), server.stop, lambda: server.url + "\n",
        lambda: f"serving; point runs at it with  export SPARK_REMOTE={server.url}  (they send the token in {token_file()})",
        watch=server.running, exit_code=lambda: server.returncode,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
