"""The Spark Connect engine: Spark's own long-lived driver (``SparkConnectServer``), launched with
the project's Spark settings, that every run attaches to as a thin client (``SPARK_REMOTE``).

    python -m lakehouse_assets.lib.spark.engine [--port 15002] [--master spark://host:7077]

runs it in the foreground (``make engine``) and prints its ``sc://`` URL once it serves.
:class:`Engine` starts and stops one from tests and scripts. Static settings (extensions,
catalog, memory, master) are the launch's; a client may change only SQL settings.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from lakehouse_assets.lib.ports import serving
from lakehouse_assets.lib.settings import REPO_ROOT, current
from lakehouse_assets.lib.spark.object_store import SECRET_KEYS
from lakehouse_assets.lib.spark.session import spark_conf

CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"


def engine_command(
    port: int, master: str | None = None, extra: dict[str, str] | None = None, secrets_file: Path | None = None
) -> list[str]:
    """``spark-submit`` of the Connect server on 127.0.0.1:``port`` with :func:`spark_conf`
    (and ``extra`` settings over it). Credentials go to ``secrets_file`` (a properties file
    only this user reads), never onto the command line that ``ps`` shows."""
    conf = spark_conf(master=master, class_archive_ok=False, extra=extra)
    secret = {key: conf.pop(key) for key in SECRET_KEYS if key in conf}
    if secret and secrets_file is None:
        raise ValueError("engine_command: credentials are configured but no secrets_file was given")
    conf |= {
        "spark.app.name": "lakehouse_assets-engine",
        "spark.connect.grpc.binding.address": current().spark_local_ip,
        "spark.connect.grpc.binding.port": str(port),
    }
    if "spark.jars" in conf:
        # A master with executor JVMs: spark_conf ships Delta's jars to them; the server's own
        # driver needs them on its class path from the start too.
        conf["spark.driver.extraClassPath"] = str(conf["spark.jars"]).replace(",", os.pathsep)
    spark_submit = Path(sys.executable).parent / "spark-submit"
    command = [str(spark_submit), "--class", CONNECT_SERVER]
    if secret:
        assert secrets_file is not None
        secrets_file.touch(mode=0o600)
        secrets_file.write_text("".join(f"{key} {value}\n" for key, value in secret.items()))
        command += ["--properties-file", str(secrets_file)]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


def engine_env() -> dict[str, str]:
    """The server's environment: its Python workers (``foreachBatch`` handlers, UDFs) run this
    virtualenv's Python and import this checkout, like the clients."""
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    python_path = [str(REPO_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env |= {
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(python_path),
        "SPARK_LOCAL_IP": current().spark_local_ip,
        # Workers import the framework, not the demo's code location (see lakehouse_assets/__init__).
        "LAKEHOUSE_ENGINE_WORKER": "1",
    }
    return env


class Engine:
    """A Connect server in its own process group, for tests and scripts.

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

    def start(self, timeout: float = 180) -> Engine:
        self._private = tempfile.TemporaryDirectory(prefix="lakehouse-engine-")  # mode 0700
        secrets_file = Path(self._private.name) / "secrets.properties"
        self.process = subprocess.Popen(
            engine_command(self.port, self.master, self.conf, secrets_file), cwd=REPO_ROOT, env=engine_env(),
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        try:
            while not serving(self.port, current().spark_local_ip):
                if self.process.poll() is not None:
                    raise RuntimeError(f"the Spark Connect engine exited with {self.process.returncode} before serving")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the Spark Connect engine did not serve on port {self.port} in {timeout:.0f}s")
                time.sleep(0.5)
        except BaseException:
            self.stop()
            raise
        secrets_file.unlink(missing_ok=True)  # spark-submit read it at launch
        return self

    def kill(self) -> None:
        """SIGKILL the server and its Python workers (an engine crash)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None
        if self._private is not None:
            self._private.cleanup()
            self._private = None

    def __enter__(self) -> Engine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the Spark Connect engine in the foreground.")
    parser.add_argument("--port", type=int, default=current().engine_port, help="port to serve on (LAKEHOUSE_ENGINE_PORT)")
    parser.add_argument("--master", default=None, help="Spark master (SPARK_MASTER; default local[*])")
    args = parser.parse_args(argv)
    if serving(args.port, current().spark_local_ip):
        print(f"engine: port {args.port} is already in use; set LAKEHOUSE_ENGINE_PORT to another port", file=sys.stderr)
        return 1
    engine = Engine(args.port, args.master, log=None)
    print(f"engine: starting Spark Connect on {engine.url} (Ctrl-C stops it)", flush=True)
    engine.start()
    print(f"engine: serving; point runs at it with  export SPARK_REMOTE={engine.url}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        assert engine.process is not None
        return engine.process.wait()
    except (KeyboardInterrupt, SystemExit):
        return 0
    finally:
        engine.stop()


if __name__ == "__main__":
    sys.exit(main())
