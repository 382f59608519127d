"""The Spark driver's class archive: used when setup built it for this JVM and these jars, and
never in a way that changes what a run does."""

from __future__ import annotations

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from lakehouse_assets.lib.accel import class_archive
from lakehouse_assets.lib.spark.conf import spark_conf
from lakehouse_assets.lib.spark.jars import cached_jars


def test_local_driver_maps_classes_from_the_archive_built_at_setup() -> None:
    jars = cached_jars()
    archive = class_archive.archive_path(jars)
    if not archive.exists():
        pytest.fail(
            f"make setup should have built {archive}: rm -r {archive.parent} .cache/spark-cds and run make setup"
        )
    conf = spark_conf(master="local[2]")
    assert f"-XX:SharedArchiveFile={archive}" in conf["spark.driver.extraJavaOptions"].split()
    assert conf["spark.driver.extraClassPath"].split(":") == jars
    assert "spark.jars" not in conf


def test_the_archive_is_keyed_by_the_class_path(tmp_path) -> None:
    jars = cached_jars()
    assert class_archive.archive_path(jars) == class_archive.archive_path(list(jars))
    assert class_archive.archive_path(jars) != class_archive.archive_path([*jars, str(tmp_path / "extra.jar")])


def test_cluster_driver_ships_jars_and_uses_no_archive(monkeypatch) -> None:
    conf = spark_conf(master="spark://spark-master:7077")
    assert conf["spark.jars"].split(",") == cached_jars()
    assert "SharedArchiveFile" not in conf["spark.driver.extraJavaOptions"]
    monkeypatch.setenv("LAKEHOUSE_CLASS_ARCHIVE", "0")
    assert "SharedArchiveFile" not in spark_conf(master="local[2]")["spark.driver.extraJavaOptions"]


def test_the_running_driver_was_started_with_the_archive(spark: SparkSession, tmp_path) -> None:
    arguments = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())  # type: ignore[union-attr]
    archive = class_archive.archive_path(cached_jars())
    assert f"-XX:SharedArchiveFile={archive}" in arguments
    # Delta's classes resolve from the driver's class path (no spark.jars in local mode).
    path = str(tmp_path / "table")
    spark.range(5).write.format("delta").save(path)
    assert sorted(r.id for r in DeltaTable.forPath(spark, path).toDF().collect()) == [0, 1, 2, 3, 4]
