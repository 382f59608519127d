"""The Spark Connect server's launch: Spark's own long-lived driver (``SparkConnectServer``) with
the project's Spark settings, that every run attaches to as a thin client (``SPARK_REMOTE``).

:func:`connect_server_command` and :func:`connect_server_env` are the command and environment;
starting, watching and stopping the server is development infrastructure
(:class:`devstack.connect_server.ConnectServer`, ``make engine``). Static settings (extensions,
catalog, memory, master) are the launch's; a client may change only SQL settings.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.child_python import child_python_path
from lakehouse_assets.lib.spark.conf import spark_conf
from lakehouse_assets.lib.spark.engine_auth import TOKEN_VARIABLE, check_binding
from lakehouse_assets.lib.spark.launch_secrets import launch_secrets, properties_arguments, write_private_properties

CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"


def connect_server_command(
    port: int, master: str | None = None, extra: dict[str, str] | None = None, secrets_file: Path | None = None
) -> list[str]:
    """``spark-submit`` of the Connect server on 127.0.0.1:``port`` with :func:`spark_conf`
    (and ``extra`` settings over it). Credentials go to ``secrets_file`` (a properties file
    only this user reads, :mod:`.launch_secrets`), never onto the command line that ``ps`` shows.

    :param port: the port to serve on.
    :param master: the Spark master (default ``SPARK_MASTER``).
    :param extra: Spark settings over the project's.
    :param secrets_file: a new file for the credentials a master with executors needs.
    """
    conf = spark_conf(master=master, class_archive_ok=False, extra=extra)
    secret = launch_secrets(str(conf["spark.master"]))
    if secret and secrets_file is None:
        raise ValueError("connect_server_command: credentials are configured but no secrets_file was given")
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
        write_private_properties(secrets_file, secret)
        command += properties_arguments(secrets_file)
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


def connect_server_env(master: str | None = None, token: str | None = None) -> dict[str, str]:
    """The server's environment: its Python workers (``foreachBatch`` handlers, UDFs) run this
    virtualenv's Python and import from where this process does (:mod:`.child_python`), like
    the clients; with a local master, through the warm-worker launcher
    (:mod:`lakehouse_assets.lib.accel.warm_workers`). The token goes in the variable Spark reads
    (:mod:`.engine_auth`), never on the command line.

    :param master: the Spark master (default ``SPARK_MASTER``).
    :param token: the token clients must send; None serves anyone, on a loopback address only.
    :raises EngineAccessError: no token, and ``SPARK_LOCAL_IP`` is not a loopback address.
    """
    settings = current()
    check_binding(settings.spark_local_ip, token)
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", TOKEN_VARIABLE)}
    local = (master or settings.spark_master).startswith("local")
    env |= {
        # Spark Connect starts its workers with PYSPARK_PYTHON; executors on other hosts would
        # not find the launcher, so a cluster's server starts them cold.
        "PYSPARK_PYTHON": _worker_python() if settings.warm_workers and local else sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        # The engine's workers import the framework and the pipeline's modules as this process did.
        "PYTHONPATH": child_python_path(env),
        "SPARK_LOCAL_IP": settings.spark_local_ip,
        **({TOKEN_VARIABLE: token} if token else {}),
    }
    return env


def _worker_python() -> str:
    """The warm workers' launcher (the speed-up in :mod:`lakehouse_assets.lib.accel`, on unless
    ``LAKEHOUSE_WARM_WORKERS=0``)."""
    from lakehouse_assets.lib.accel.warm_workers import launcher_path

    return launcher_path()
