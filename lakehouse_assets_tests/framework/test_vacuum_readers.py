"""VACUUM keeps what a reader of the project has yet to read: a change-feed reader left behind
while its upstream table gets more commits, OPTIMIZE and a VACUUM of retention 0 still reads
every row exactly once afterwards; readers that are current hold nothing back. (Where a reader
stands, on files alone: ``unit/test_reader_positions.py``.)"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse_assets.lib import LakehousePaths, change_feed, landing, stream, streaming_table
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.engine.state.readers import readers_of
from lakehouse_assets.lib.orchestrate.maintenance import MaintenanceConfig, maintain_table
from lakehouse_assets.lib.spark.session import session_settings

# Delta refuses a retention under the table's 7 days unless told the operator knows better.
NO_RETENTION_CHECK = {"spark.databricks.delta.retentionDurationCheck.enabled": "false"}


@streaming_table(group="test", inputs={"lines": landing("numbers")})
def numbers(lines: DataFrame) -> DataFrame:
    return lines.select(F.col("value").cast("int").alias("n"))


@streaming_table(group="test", inputs={"numbers": change_feed("numbers")})
def number_changes(numbers: DataFrame) -> DataFrame:
    return numbers.select("n", F.col("_change_type").alias("change"))


@streaming_table(group="test", inputs={"numbers": stream("numbers")})
def number_copies(numbers: DataFrame) -> DataFrame:
    return numbers.select("n")


READERS = readers_of([numbers, number_changes, number_copies], "numbers")


def land_and_run(spark: SparkSession, paths: LakehousePaths, n: int) -> None:
    """One landed file, one run of ``numbers``: one more commit of one small file."""
    folder = Path(paths.landing("numbers"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{n}.txt").write_text(f"{n}\n")
    run_table(spark, paths, numbers)


def maintain(spark: SparkSession, paths: LakehousePaths) -> dict:
    with session_settings(spark, NO_RETENTION_CHECK, owner="test"):
        figures = maintain_table(spark, paths, "numbers", MaintenanceConfig(retention_hours=0), print, READERS)
    assert figures is not None
    return figures


def changes(spark: SparkSession, paths: LakehousePaths) -> list[tuple]:
    return sorted(map(tuple, spark.read.format("delta").load(paths.table("number_changes")).collect()))


def test_vacuum_keeps_the_files_a_reader_behind_needs(tmp_path: Path, spark: SparkSession) -> None:
    paths = LakehousePaths(str(tmp_path))
    land_and_run(spark, paths, 1)
    land_and_run(spark, paths, 2)
    run_table(spark, paths, number_changes)  # read up to version 2; next: version 3
    land_and_run(spark, paths, 3)
    land_and_run(spark, paths, 4)
    run_table(spark, paths, number_copies)  # current: read every version

    behind = maintain(spark, paths)

    assert behind["optimize_files_removed"] == 4  # one small file per commit, compacted into one
    assert (behind["oldest_reader"], behind["oldest_reader_version"]) == ("number_changes", 3)
    assert behind["retention_hours"] in (1, 2)  # versions 3 and 4 are seconds old: rounded up, plus an hour
    assert behind["vacuum_kept"].startswith(
        f"{behind['retention_hours']} hours, not 0: number_changes has yet to read version 3 and later"
    )
    assert behind["stored_files_after"] == behind["stored_files_before"] + 1  # nothing deleted
    run_table(spark, paths, number_changes)
    assert changes(spark, paths) == [(n, "insert") for n in (1, 2, 3, 4)]

    # Control: with every reader current, nothing holds VACUUM back and it deletes every file
    # the table no longer references.
    land_and_run(spark, paths, 5)
    run_table(spark, paths, number_changes)
    run_table(spark, paths, number_copies)
    current = maintain(spark, paths)
    assert "oldest_reader" not in current
    assert current["retention_hours"] == 0
    assert current["vacuum_kept"] == "0 hours as configured: no reader of the project has a version left to read"
    assert current["stored_files_before"] == 6 and current["stored_files_after"] == current["active_files_after"] == 1
    assert changes(spark, paths) == [(n, "insert") for n in (1, 2, 3, 4, 5)]
