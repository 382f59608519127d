"""The Spark session: local by default, configured for Delta and a small machine.

One session per process (``getOrCreate``); Dagster runs every step of a run in one process
(the in-process executor), so a run starts one JVM whatever it materializes.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from dagster_pyspark import LazyPySparkResource
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from lakehouse_assets.lib import timings
from lakehouse_assets.lib.errors import DeclarationError, first_line
from lakehouse_assets.lib.settings import REPO_ROOT, current
from lakehouse_assets.lib.spark import class_archive
from lakehouse_assets.lib.spark.jars import cached_jars
from lakehouse_assets.lib.spark.object_store import CREDENTIAL_PROVIDER, SECRET_KEYS, s3a_conf

ENGINE_RETRIES = 6  # about 12 s of back-off before a run reports the engine unreachable


def spark_conf(
    master: str | None = None,
    extra: dict[str, Any] | None = None,
    require_jars: bool = True,
    class_archive_ok: bool = True,
) -> dict[str, Any]:
    """Spark settings: Delta extensions, UTC, no UI, sized for ``local[*]`` on a few cores; a
    local driver maps its classes from the setup-time class archive (:mod:`.class_archive`).

    ``SPARK_MASTER`` overrides the master; ``SPARK_SHUFFLE_PARTITIONS`` the shuffle width;
    ``SPARK_LISTING_PARALLELISM`` the tasks that list files read by path (local masters);
    ``SPARK_DRIVER_JAVA_OPTIONS`` adds JVM flags to the driver (see docs/performance.md).

    :param master: the master (default ``SPARK_MASTER``).
    :param extra: settings that override these.
    :param require_jars: resolve Delta's jars from the cache (``False``: none on the class path).
    :param class_archive_ok: a local driver may map the class archive (the engine does not).
    """
    settings = current()
    master = master or (extra or {}).get("spark.master") or settings.spark_master
    # One JVM only: local-cluster[...] has executor JVMs of its own, which need spark.jars.
    local = master == "local" or master.startswith("local[")
    jars = cached_jars() if require_jars else []
    java_options = [f"-Dderby.system.home={REPO_ROOT / '.cache' / 'derby'}"]
    if local and jars and class_archive_ok:
        # On the driver's class path (not spark.jars) Delta's classes can come from the class
        # archive too; a local driver is its own executor, so nothing else needs them.
        java_options += class_archive.driver_options(jars)
    conf: dict[str, Any] = {
        "spark.master": master,
        "spark.app.name": "lakehouse_assets",
        **({"spark.driver.extraClassPath": os.pathsep.join(jars)} if local else {"spark.jars": ",".join(jars)}),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": settings.spark_shuffle_partitions,
        "spark.default.parallelism": settings.spark_shuffle_partitions,
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.streaming.stateStore.providerClass": (
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
        ),
        # Duplicate JSON keys keep the last value (as from_json does) instead of failing the query.
        "spark.sql.mapKeyDedupPolicy": "LAST_WIN",
        # Proleptic Gregorian throughout: dates before 1582 are written as given, never refused.
        "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
        "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
        "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
        "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
        "spark.sql.warehouse.dir": str(REPO_ROOT / ".cache" / "spark-warehouse"),
        "spark.driver.extraJavaOptions": " ".join([*java_options, settings.spark_driver_java_options]).strip(),
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        # Delta rebuilds table state with 50 partitions by default: far too many tasks locally.
        "spark.databricks.delta.snapshotPartitions": settings.spark_shuffle_partitions,
        "spark.databricks.delta.properties.defaults.enableChangeDataFeed": "false",
        "spark.driver.memory": settings.spark_driver_memory,
        "spark.log.level": settings.spark_log_level,
        # Python workers (UDFs, an engine's foreachBatch) run this virtualenv's interpreter.
        "spark.pyspark.python": sys.executable,
        **s3a_conf(settings),
    }
    if local:
        # A local driver reads the credentials from its environment (S3A's default chain), as
        # PySpark would otherwise put them on the JVM's command line for every user to see.
        for key in (CREDENTIAL_PROVIDER, *SECRET_KEYS):
            conf.pop(key, None)
    if master.startswith("local"):
        # A local driver talks only to itself: bind to loopback, never to a public interface.
        conf["spark.driver.bindAddress"] = settings.spark_local_ip
        conf["spark.driver.host"] = settings.spark_local_ip
        # Reading many files by path (a backlog in the landing zone, the conservation check) lists
        # them in a Spark job with one task per file by default: 2,000 files took 17 s, not 3.
        conf["spark.sql.sources.parallelPartitionDiscovery.parallelism"] = settings.spark_listing_parallelism
    conf.update(extra or {})
    return conf


def get_spark(extra: dict[str, Any] | None = None) -> SparkSession:
    """The process's SparkSession: a client of the Spark Connect engine at ``SPARK_REMOTE`` when
    it is set (no JVM in this process; the engine's launch holds the settings), else an
    embedded session created with :func:`spark_conf` on first use."""
    remote = current().spark_remote
    if remote:
        return _engine_client(remote)
    builder = SparkSession.builder
    for key, value in spark_conf(extra=extra).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _engine_client(remote: str) -> SparkSession:
    from pyspark.sql.connect.client.retries import DefaultPolicy

    spark = SparkSession.builder.remote(remote).getOrCreate()
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
    return _engine_client(remote)


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


class SparkResource(LazyPySparkResource):
    """dagster-pyspark's lazy resource: the JVM starts only when a step first needs Spark, with
    :func:`spark_conf` (checked then, not at import) plus ``spark_config`` overrides."""

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
