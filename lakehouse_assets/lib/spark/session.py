"""The Spark session: local by default, configured for Delta and a small machine.

One session per process (``getOrCreate``); Dagster runs every step of a run in one process
(the in-process executor), so a run starts one JVM whatever it materializes.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dagster_pyspark import LazyPySparkResource
from pydantic import PrivateAttr
from pyspark.errors import PySparkException
from pyspark.logger import PySparkLogger
from pyspark.sql import SparkSession

from lakehouse_assets.lib import timings
from lakehouse_assets.lib.errors import DeclarationError, first_line
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.conf import spark_conf
from lakehouse_assets.lib.spark.engine_auth import client_token, client_url
from lakehouse_assets.lib.spark.launch_secrets import embedded_driver_secrets

ENGINE_RETRIES = 6  # about 12 s of back-off before a run reports the engine unreachable
# PySpark logs every error with a query context as multi-KB JSON at ERROR, before the caller sees
# it; the framework says what failed in one sentence (the trace stays in the step's failure).
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def get_spark(extra: dict[str, Any] | None = None) -> SparkSession:
    """The process's SparkSession: a client of the Spark Connect engine at ``SPARK_REMOTE`` when
    it is set (no JVM in this process; the engine's launch holds the settings), else an
    embedded session created with :func:`spark_conf` on first use."""
    for name in QUERY_CONTEXT_LOGGERS:  # PySpark's own logger class: its calls pass extra fields
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)
    remote = current().spark_remote
    if remote:
        return engine_client(remote)
    conf = spark_conf(extra=extra)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    with embedded_driver_secrets(str(conf["spark.master"])):  # credentials off the command line
        return builder.getOrCreate()


def engine_session(remote: str) -> SparkSession:
    """A new Spark Connect session on the engine at ``remote``, sending the engine's token
    (:mod:`.engine_auth`); for scripts and tools, with PySpark's own retry policy.

    :param remote: the engine's ``sc://host:port`` URL.
    """
    return SparkSession.builder.remote(client_url(remote, client_token())).create()


def engine_client(remote: str) -> SparkSession:
    """The process's session on the engine at ``remote`` (the one it has, else a new one), with
    the engine's token, and retries that give up on an unreachable engine after ~12 s.

    :param remote: the engine's ``sc://host:port`` URL.
    """
    from pyspark.sql.connect.client.retries import DefaultPolicy

    spark = SparkSession.builder.remote(client_url(remote, client_token())).getOrCreate()
    # The run reports an unreachable engine in its own words (engine.errors.engine_lost).
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")
    # PySpark retries an unreachable engine for at least 10 minutes; a run should say so sooner.
    policy = DefaultPolicy(max_retries=ENGINE_RETRIES, initial_backoff=200, backoff_multiplier=2.0, max_backoff=4000)
    spark.client.set_retry_policies([policy])
    return spark


def renew_spark(session: SparkSession) -> SparkSession:
    """A session to try again with after a passing engine fault: as a client of an engine, a new
    Connect session (a restarted engine does not know the old one); embedded, the same one."""
    remote = current().spark_remote
    if not remote:
        return session
    with contextlib.suppress(Exception):  # the engine that held it may be gone
        session.stop()
    return engine_client(remote)


@contextlib.contextmanager
def session_settings(spark: SparkSession, settings: Mapping[str, str], owner: str) -> Iterator[None]:
    """Spark settings for what runs inside (a flow's ``spark_conf``), the session's own after.

    A streaming query copies the session's settings when it starts, so they hold for its whole
    run. A setting Spark will not change at run time stops the flow with one sentence.
    """
    before = {key: spark.conf.get(key, None) for key in settings}
    try:
        for key, value in settings.items():
            try:
                spark.conf.set(key, value)
            except PySparkException as error:
                raise DeclarationError(
                    f"{owner}: spark_conf {key}={value} cannot be set for one flow: {first_line(error)}"
                ) from None
        yield
    finally:
        for key, previous in before.items():
            with contextlib.suppress(Exception):
                spark.conf.unset(key) if previous is None else spark.conf.set(key, previous)


@dataclass
class EngineWatch:
    """What a run's process remembers of its engine between tables: when it last gave up on it
    (``time.monotonic()``), so the next tables try once instead of waiting through every back-off."""

    gave_up_at: float | None = None


class SparkResource(LazyPySparkResource):
    """dagster-pyspark's lazy resource: the JVM starts only when a step first needs Spark, with
    :func:`spark_conf` (checked then, not at import) plus ``spark_config`` overrides. It owns the
    process's :class:`EngineWatch`."""

    _engine_watch: EngineWatch = PrivateAttr(default_factory=EngineWatch)

    @property
    def engine_watch(self) -> EngineWatch:
        return self._engine_watch

    def _init_session(self) -> None:
        if self._spark_session is None:
            with timings.span("session_start"):
                self._spark_session = get_spark(extra=self.spark_config)

    def renew_session(self) -> SparkSession:
        """After a passing engine fault: the session the next try runs on (:func:`renew_spark`)."""
        self._spark_session = renew_spark(self.spark_session)
        return self._spark_session


def spark_resource(**overrides: Any) -> SparkResource:
    return SparkResource(spark_config=overrides)
