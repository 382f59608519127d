"""What a run reads of the framework's own bookkeeping (the intake's ledger, the checkpoint's
offsets and commits, the table's schema and writer records) does not grow with the files landed
before: a one-file run after 1,500 earlier files reads no more of it than one after 10 (once the
run after the backlog has cleaned it: each run cleans the files its predecessor committed).
Spark's own file-source log stays bounded too: once a compact file of it holds the cleaned
backlog, the next run drops those entries (``engine/intake/forgetting.py``)."""

from __future__ import annotations

import json
import time
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
    interval = "spark.sql.streaming.fileSource.log.compactInterval"
    spark.conf.set(interval, "3")  # a compact file every third source batch (Spark's default: 10)
    try:
        _runs(tmp_path, spark, monkeypatch)
    finally:
        spark.conf.unset(interval)


def _runs(tmp_path: Path, spark, monkeypatch) -> None:
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
            report = run_table(spark, paths, archived)
        finally:
            monkeypatch.setattr(storage, "read_bytes", read_bytes)
        assert report.rows_written == 1
        return sum(size for _, size in counted)

    land(folder, 0, 10)
    run_table(spark, paths, archived)
    one_file_run(10)  # cleans what the run before committed: each run cleans its predecessor's files
    after_10 = one_file_run(11)
    land(folder, 12, 1500)
    assert run_table(spark, paths, archived).rows_written == 1500
    one_file_run(2000)
    after_1512 = one_file_run(2001)
    largest = max(counted, key=lambda c: c[1])
    assert after_1512 <= after_10 * 1.2 + 1024, f"{after_10} -> {after_1512} bytes; largest read {largest}"
    rows = spark.read.format("delta").load(paths.table("archived")).count()
    assert rows == 10 + 2 + 1500 + 2
    # Retention kept the landing folder to what the last run read: the next run archives it.
    assert len(list(folder.iterdir())) <= 2
    # Spark's log: source batches 0 (10 files), 1, 2 (compact), 3 (the backlog), 4 and 5 (compact,
    # every entry up to it but the 12 dropped at the backlog run's start); run 2002 drops the
    # entries of the files cleaned, and its query starts from a small compact file.
    log = Path(query_checkpoint(paths, archived).removeprefix("file:")) / "sources" / "0"
    assert len((log / "5.compact").read_text().splitlines()) == 1 + 1502
    one_file_run(2002)
    assert (log / "5.compact").read_text().splitlines() == ["v1"]
    one_file_run(2003)  # its query reads the forgetful log: still every file exactly once
    ids = [r.reading_id for r in spark.read.format("delta").load(paths.table("archived")).collect()]
    assert sorted(ids) == sorted(f"r{i}" for i in [*range(12 + 1500), 2000, 2001, 2002, 2003])
