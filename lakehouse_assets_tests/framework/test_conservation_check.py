"""The landed-lines conservation check counts a run's stored rows in its appends' change feed when
only the run's micro-batches appended since the last check, and in the whole table otherwise:
either way a lost line fails it, and a row written by hand sends it to the whole table."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from lakehouse_assets.lib import landed_lines_conserved
from lakehouse_assets.lib.engine.checks.check_context import CheckContext
from lakehouse_assets.lib.engine.checks.check_rules import evaluate
from lakehouse_assets.lib.engine.report import RunReport
from lakehouse_assets.lib.engine.state import delta_log
from lakehouse_assets.lib.paths import LakehousePaths

CHECK = landed_lines_conserved(quarantine="lines_quarantine")


def _append(spark: SparkSession, path: str, rows: list[tuple[str, str]], batch: int | None) -> None:
    """Rows (line, source file) appended as a micro-batch would (with a transaction id) or, with
    ``batch`` None, as a change made by hand."""
    writer = spark.createDataFrame(rows, "line string, _source_file string").write.format("delta").mode("append")
    if batch is not None:
        writer = writer.option("txnAppId", "test-run").option("txnVersion", batch)
    writer.option("delta.enableChangeDataFeed", "true").save(path)


def _landed(tmp_path: Path, **files: str) -> tuple[LakehousePaths, str, str, list[str]]:
    """A data root, the paths of its tables ``lines`` and ``lines_quarantine``, and ``files``
    (name: text) landed: their URIs as ``_source_file`` holds them, in order."""
    landed = tmp_path / "landing"
    landed.mkdir()
    for name, text in files.items():
        (landed / name).write_text(text)
    paths = LakehousePaths(str(tmp_path))
    return paths, paths.table("lines"), paths.table("lines_quarantine"), [f"file:{landed / n}" for n in files]


def _check(spark: SparkSession, paths: LakehousePaths, since: dict[str, int], files: list[str]):
    report = RunReport("lines", landed_files=files)
    return evaluate(CHECK, CheckContext(spark, paths, "lines", report, since, None))


def test_a_lost_line_fails_whether_the_stored_rows_come_from_the_appends_or_the_whole_table(
    spark: SparkSession, tmp_path: Path
) -> None:
    paths, table, quarantine, (a, b) = _landed(
        tmp_path, **{"a.jsonl": "one\ntwo\n\n", "b.jsonl": '{"x": 1}\n{"x": 2}\nnot json\n  \n'}
    )
    _append(spark, table, [("one", a), ("two", a)], batch=0)
    _append(spark, quarantine, [], batch=0)
    since = {"lines": delta_log.delta_version(table) or 0, "lines_quarantine": delta_log.delta_version(quarantine) or 0}
    # The next run stores b's two JSON lines but loses its bad line (the quarantine gets nothing).
    _append(spark, table, [('{"x": 1}', b), ('{"x": 2}', b)], batch=1)
    outcome = _check(spark, paths, since, [b])
    assert not outcome.passed
    assert outcome.metadata["stored_rows_read_from"] == "the appends since the last check"
    assert outcome.metadata["files_mismatched"] == 1 and f"'{b}', 3, 2" in outcome.metadata["examples"]
    # The quarantine gets the line in the run's next micro-batch: conserved, still from the appends.
    _append(spark, quarantine, [("not json", b)], batch=1)
    outcome = _check(spark, paths, since, [b])
    assert outcome.passed, outcome.metadata
    assert outcome.metadata["stored_rows_read_from"] == "the appends since the last check"
    # A row of b appended by hand (no transaction): the whole table is counted, and b has one too many.
    _append(spark, table, [('{"x": 2}', b)], batch=None)
    outcome = _check(spark, paths, since, [b])
    assert not outcome.passed and f"'{b}', 3, 4" in outcome.metadata["examples"]
    assert outcome.metadata["stored_rows_read_from"] == "the whole table"


def test_a_first_evaluation_counts_the_runs_own_files_and_says_so(spark: SparkSession, tmp_path: Path) -> None:
    """No earlier evaluation (a table older than its Dagster instance): the run's files are
    counted, those landed before are not re-read, and the metadata says so; without the run's
    files known, the whole history is counted."""
    paths, table, quarantine, (a, b) = _landed(
        tmp_path, **{"old.jsonl": "one\ntwo\nthree\n", "new.jsonl": "four\nfive\n"}
    )
    _append(spark, table, [("one", a), ("two", a)], batch=0)  # an older run lost a line of a
    _append(spark, quarantine, [], batch=0)
    _append(spark, table, [("four", b), ("five", b)], batch=1)
    outcome = _check(spark, paths, {}, [b])
    assert outcome.passed, outcome.metadata
    assert outcome.metadata["files_checked"] == 1
    assert "first evaluation" in outcome.metadata["files_counted"]
    whole = evaluate(CHECK, CheckContext(spark, paths, "lines", RunReport("lines"), {}, None))
    assert not whole.passed and f"'{a}', 3, 2" in whole.metadata["examples"]
    assert whole.metadata["files_checked"] == 2 and "files_counted" not in whole.metadata
