"""What a run reads of the framework's own bookkeeping (the intake's ledger, the checkpoint's
offsets and commits, the table's schema and writer records) does not grow with the files landed
before: a one-file run after 1,500 earlier files reads no more of it than one after 10 (once the
run after the backlog has cleaned it: each run cleans the files its predecessor committed).
(Spark's own file-source log does grow; ``make bench-history`` measures what that costs.)"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.engine.state import storage
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
