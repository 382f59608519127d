"""The JVM side of Delta Lake, Spark's Kafka and Avro connectors and Hadoop's S3 filesystem, resolved from Maven Central once
at setup time into a local cache.

``python -m lakehouse_assets.lib.spark.jars`` downloads the packages with Spark's own Ivy resolver and
keeps only the jars Spark does not already ship, so a run needs no network. The cache is per
user, like pip's and Ivy's (``$XDG_CACHE_HOME/lakehouse_assets/spark-jars/<packages>``, or
``LAKEHOUSE_JAR_CACHE``): every clone and virtualenv of the same versions shares one download.
Every jar kept must have the SHA-256 committed in :mod:`.jar_checksums`
(:mod:`lakehouse_assets.lib.downloads`), or setup stops naming it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

from lakehouse_assets.lib.downloads import ChecksumMismatch, check_folder
from lakehouse_assets.lib.errors import first_line
from lakehouse_assets.lib.settings import current, user_cache
from lakehouse_assets.lib.spark.jar_checksums import SPARK_JARS

DELTA_VERSION = "4.4.0"
SCALA_VERSION = "2.13"
SPARK_MINOR = ".".join(pyspark.__version__.split(".")[:2])
HADOOP_VERSION = "3.5.0"  # pyspark 4.2's hadoop-client-api
AWS_SDK_VERSION = "2.35.4"  # the SDK hadoop-aws 3.5.0 was built with
MAVEN_PACKAGES = [
    f"io.delta:delta-spark_{SPARK_MINOR}_{SCALA_VERSION}:{DELTA_VERSION}",
    # Spark's Kafka source and sink, at pyspark's own version.
    f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_VERSION}:{pyspark.__version__}",
    # format("avro"), for landed Avro files.
    f"org.apache.spark:spark-avro_{SCALA_VERSION}:{pyspark.__version__}",
    # s3a:// at pyspark's Hadoop version, with the AWS SDK modules it calls (18 MB), not the SDK
    # bundle hadoop-aws depends on (686 MB).
    f"org.apache.hadoop:hadoop-aws:{HADOOP_VERSION}",
    *(
        f"software.amazon.awssdk:{module}:{AWS_SDK_VERSION}"
        for module in ("s3", "sts", "s3-transfer-manager", "apache-client")
    ),
]
MAVEN_EXCLUDES = ["software.amazon.awssdk:bundle", "org.wildfly.openssl:wildfly-openssl"]
PINS = "lakehouse_assets/lib/spark/jar_checksums.py"


def jar_cache_dir() -> Path:
    """The cache folder of the pinned packages (one folder per package list)."""
    configured = current().jar_cache
    if configured:
        return Path(configured)
    key = hashlib.sha256(_manifest().encode()).hexdigest()[:12]
    return user_cache() / "spark-jars" / key


def _manifest() -> str:
    return "\n".join([*MAVEN_PACKAGES, *(f"-{e}" for e in MAVEN_EXCLUDES)]) + "\n"


def cached_jars() -> list[str]:
    """The cached jars for the pinned packages; raises with the fix when the cache is missing."""
    cache = jar_cache_dir()
    manifest = cache / "MANIFEST"
    if not manifest.exists() or manifest.read_text() != _manifest():
        raise RuntimeError(
            f"Delta Lake's, Kafka's, Avro's and S3's jars are not in {cache}: run `python -m lakehouse_assets.lib.spark.jars` "
            "(`make setup` in a checkout; needs Maven Central once)."
        )
    return sorted(str(p) for p in cache.glob("*.jar"))


def _artifact_name(jar: Path, from_ivy: bool = False) -> str:
    # Ivy names jars "<org>_<artifact>-<version>.jar"; Spark's own are "<artifact>-<version>.jar".
    stem = jar.stem.split("_", 1)[1] if from_ivy else jar.stem
    parts = stem.split("-")
    while parts and not parts[-1][:1].isalpha():
        parts.pop()
    return "-".join(parts)


@contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """Send this process's stdout and stderr, and those of the JVM it starts, to ``log``: Ivy's
    resolver prints dozens of lines (mirrors it cannot reach, proxy hints) that are not errors."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "ab") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def resolve() -> list[Path]:
    """Download the packages into the cache, skipping jars Spark already provides."""
    from pyspark.sql import SparkSession

    cache = jar_cache_dir()
    ivy = cache.parent / f"ivy-{os.getpid()}"
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("lakehouse-setup")
        .config("spark.jars.packages", ",".join(MAVEN_PACKAGES))
        .config("spark.jars.excludes", ",".join(MAVEN_EXCLUDES))
        .config("spark.jars.ivy", str(ivy))
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.stop()
    spark_jars = {_artifact_name(p) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    # Filled beside the cache and renamed into place: another setup running at the same time
    # never sees a half-copied folder.
    staging = cache.parent / f"{cache.name}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for jar in sorted((ivy / "jars").glob("*.jar")):
        if _artifact_name(jar, from_ivy=True) not in spark_jars:
            shutil.copy2(jar, staging / jar.name)
    shutil.rmtree(ivy, ignore_errors=True)
    try:
        check_pinned(staging)
    except ChecksumMismatch:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    (staging / "MANIFEST").write_text(_manifest())
    shutil.rmtree(cache, ignore_errors=True)
    staging.rename(cache)
    return sorted(cache.glob("*.jar"))


def check_pinned(folder: Path) -> None:
    """Refuse ``folder`` unless its jars are exactly those pinned in :mod:`.jar_checksums`.

    :param folder: the downloaded jars.
    :raises ChecksumMismatch: one sentence naming the jar.
    """
    check_folder(folder, SPARK_JARS, "a jar of Delta Lake, Kafka, Avro or S3 for Spark", PINS)


def main() -> int:
    try:
        cached_jars()
    except RuntimeError:
        pass
    else:
        try:
            check_pinned(jar_cache_dir())  # a cache filled before the pins: checked once
        except ChecksumMismatch as error:
            print(error, file=sys.stderr)
            return 1
        return 0
    log = user_cache() / "setup.log"  # beside the jars: the resolver's output is per user too
    print(f"setup: resolving {', '.join(MAVEN_PACKAGES)} from Maven Central (log: {log})", flush=True)
    try:
        with _output_to(log):
            kept = resolve()
    except ChecksumMismatch as error:
        print(error, file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 - turn a JVM/Ivy failure into one sentence
        print(
            "Setup failed: could not download Delta Lake's, Kafka's, Avro's and S3's jars from Maven Central "
            f"({first_line(error)}; resolver output in {log}). Check the network or proxy (or set "
            "LAKEHOUSE_JAR_CACHE to a folder holding them) and run `make setup` again.",
            file=sys.stderr,
        )
        return 1
    print(f"setup: cached {len(kept)} jars in {jar_cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
