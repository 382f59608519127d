"""What a run reads of the framework's own bookkeeping (the intake's ledger, the checkpoint's
offsets and commits, the table's schema and writer records) does not grow with the files landed
before: a one-file run after 1,500 earlier files reads no more of it than one after 10 (once the
run after the backlog has cleaned it: each run cleans the files its predecessor committed).
Spark's own file-source log stays bounded too: each run drops the files cleaned from it
(``engine/intake/forgetting.py``)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.engine.state.checkpoint import query_checkpoint
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets_tests.framework.retention_pipeline.tables import archived

pytestmark = [pytest.mark.slow, pytest.mark.gate]


def land(folder: Path, first: int, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(first, first + count):
        (folder / f"_r{i}.jsonl").write_text(json.dumps({"reading_id": f"r{i}", "kwh": i}) + "\n")
        (folder / f"_r{i}.jsonl").rename(folder / f"r{i}.jsonl")


def test_a_run_reads_as_much_bookkeeping_after_1500_files_as_after_10(tmp_path: Path, spark, monkeypatch) -> None:
    monkeypatch.setenv("LAKEHOUSE_SENSOR_GRACE_SECONDS", "1")  # the cursor remembers names 1 s back
    # A compact file of Spark's log every third source batch (Spark's default: 10).
    table = replace(archived, spark_conf={"spark.sql.streaming.fileSource.log.compactInterval": "3"})
    paths = LakehousePaths(str(tmp_path / "lakehouse"))
    folder = tmp_path / "lakehouse" / "landing" / "archived"
    read_bytes, counted = storage.read_bytes, []

    def counting(path: str) -> bytes | None:
        data = read_bytes(path)
        counted.append((path, len(data or b"")))
        return data

    def one_file_run(n: int) -> int:
        time.sleep(1.5)  # the earlier files leave the cursor's grace window
        land(folder, n, 1)
        counted.clear()
        monkeypatch.setattr(storage, "read_bytes", counting)
        try:
            report = run_table(spark, paths, table)
        finally:
            monkeypatch.setattr(storage, "read_bytes", read_bytes)
        assert report.rows_written == 1
        return sum(size for _, size in counted)

    land(folder, 0, 10)
    run_table(spark, paths, table)
    one_file_run(10)  # cleans what the run before committed: each run cleans its predecessor's files
    after_10 = one_file_run(11)
    land(folder, 12, 1500)
    assert run_table(spark, paths, table).rows_written == 1500
    one_file_run(2000)
    after_1512 = one_file_run(2001)
    largest = max(counted, key=lambda c: c[1])
    assert after_1512 <= after_10 * 1.2 + 1024, f"{after_10} -> {after_1512} bytes; largest read {largest}"
    rows = spark.read.format("delta").load(paths.table("archived")).count()
    assert rows == 10 + 2 + 1500 + 2
    # Retention kept the landing folder to what the last run read: the next run archives it.
    assert len(list(folder.iterdir())) <= 2
    # Spark's log, a compact file every third source batch: 0 (10 files), 1, 2 (compact), 3 (the
    # backlog), 4, 5 (compact). Each run dropped the files its predecessor committed (cleaned
    # since) from the files a query start reads: compact 5 holds the last run's file only.
    log = Path(query_checkpoint(paths, table).removeprefix("file:")) / "sources" / "0"
    logged = [json.loads(line)["path"].rsplit("/", 1)[-1] for line in (log / "5.compact").read_text().splitlines()[1:]]
    assert logged == ["r2001.jsonl"]
    assert (log / "3").read_text().splitlines() == ["v1"]  # the backlog's 1,500 entries
    one_file_run(2002)
    assert (log / "5.compact").read_text().splitlines() == ["v1"]
    one_file_run(2003)  # its query reads the forgetful log: still every file exactly once
    ids = [r.reading_id for r in spark.read.format("delta").load(paths.table("archived")).collect()]
    assert sorted(ids) == sorted(f"r{i}" for i in [*range(12 + 1500), 2000, 2001, 2002, 2003])


def test_a_file_landed_again_under_a_cleaned_name_is_read_and_archived_beside_it(tmp_path: Path, spark) -> None:
    """Spark's file source skips a name it remembers; the intake makes it forget a cleaned
    name that lands again (here in a batch file: the default compact interval, 10)."""
    table = replace(archived, spark_conf={})
    paths = LakehousePaths(str(tmp_path / "lakehouse"))
    folder = tmp_path / "lakehouse" / "landing" / "archived"
    folder.mkdir(parents=True)
    landed: list[str] = []

    def land_as(name: str, ids: list[str]) -> None:
        (folder / f"_{name}").write_text("".join(json.dumps({"reading_id": i, "kwh": 1.0}) + "\n" for i in ids))
        (folder / f"_{name}").rename(folder / name)
        landed.extend(ids)

    land_as("a.jsonl", ["a1", "a2"])
    run_table(spark, paths, table)
    land_as("b.jsonl", ["b1"])
    run_table(spark, paths, table)  # archives a.jsonl
    land_as("a.jsonl", ["a3", "a4"])  # the same name, new readings
    assert run_table(spark, paths, table).rows_written == 2
    run_table(spark, paths, table)  # archives it beside the first
    ids = [r.reading_id for r in spark.read.format("delta").load(paths.table("archived")).collect()]
    assert sorted(ids) == sorted(landed)
    archive = sorted((tmp_path / "lakehouse" / "archive" / "archived").rglob("*.jsonl"))
    assert sorted(p.read_text().count('"reading_id"') for p in archive) == [1, 2, 2]  # b, a, a again: none lost
    if len({p.parent for p in archive}) == 1:  # one day's folder (not a run across midnight UTC)
        assert [p.name for p in archive] == ["1-a.jsonl", "a.jsonl", "b.jsonl"]
        assert '"a3"' in archive[0].read_text() and '"a1"' in archive[1].read_text()
    assert not list(folder.glob("*.jsonl"))
