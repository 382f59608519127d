"""The Spark settings every session of the project starts with: Delta, UTC, no UI, sized for a
small machine. Dagster-free, so a plain PySpark script (the bench's baseline) and the Connect
server's launch start with exactly the settings a run's embedded session gets.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.jars import cached_jars
from lakehouse_assets.lib.spark.launch_secrets import is_local_master
from lakehouse_assets.lib.spark.object_store import CREDENTIAL_PROVIDER, s3a_conf


def spark_conf(
    master: str | None = None,
    extra: dict[str, Any] | None = None,
    require_jars: bool = True,
    class_archive_ok: bool = True,
) -> dict[str, Any]:
    """Spark settings: Delta extensions, UTC, no UI, sized for ``local[*]`` on a few cores; a
    local driver maps its classes from the setup-time class archive (:mod:`.class_archive`).
    They hold no credential, because they go on spark-submit's command line (:mod:`.launch_secrets`).

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
    local = is_local_master(master)
    jars = cached_jars() if require_jars else []
    # A JVM whose default zone is not UTC makes Delta verify each commit's checksum of a small
    # table by rebuilding its state (allFilesInCrc.verificationMode.forceOnNonUTC): the session's
    # zone is UTC already, so the JVM's is too, wherever the machine is.
    # The metastore's and warehouse's folders are the data root's (LakehousePaths.spark_state),
    # never the installed package's.
    state = LakehousePaths(settings.root).spark_state()
    java_options = [f"-Dderby.system.home={state / 'derby'}", "-Duser.timezone=UTC"]
    if local and jars and class_archive_ok:
        # On the driver's class path (not spark.jars) Delta's classes can come from the class
        # archive too; a local driver is its own executor, so nothing else needs them.
        from lakehouse_assets.lib.accel.class_archive import driver_options  # the speed-up, switched off by setting

        java_options += driver_options(jars)
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
        "spark.sql.warehouse.dir": str(state / "warehouse"),
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
        # A local driver reads the credentials from its environment (S3A's default chain); any
        # other gets them from a private file at launch (launch_secrets), never from here: these
        # settings go on spark-submit's command line, for every user to see.
        conf.pop(CREDENTIAL_PROVIDER, None)
    if master.startswith("local"):
        # A local driver talks only to itself: bind to loopback, never to a public interface.
        conf["spark.driver.bindAddress"] = settings.spark_local_ip
        conf["spark.driver.host"] = settings.spark_local_ip
        # Reading many files by path (a backlog in the landing zone, the conservation check) lists
        # them in a Spark job with one task per file by default: 2,000 files took 17 s, not 3.
        conf["spark.sql.sources.parallelPartitionDiscovery.parallelism"] = settings.spark_listing_parallelism
    conf.update(extra or {})
    return conf
