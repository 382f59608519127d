"""Comparing a lakehouse with a clean reference run over the same landed files.

The contract's promise for runs is that any sequence of runs, killed and retried, leaves every
table exactly as one clean run over the same files would. For the tables whose answer the tests
also compute in plain Python (the events chain, the SCD2 history) that answer is used too; for
the watermark-driven gold tables the clean run *is* the definition, so a second data root that
receives the same files and runs without faults is the answer here.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from lakehouse_assets.definitions import TABLES
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.paths import LakehousePaths

# Columns that legitimately differ between two correct runs: when a row was ingested.
VOLATILE = {"_ingested_at"}
ALL_TABLES = [name for table in TABLES for name in table.delta_outputs]


def mirror_landing(files: list[Path], subject_root: Path, reference_root: Path) -> None:
    """Hard-link newly landed files into the reference root's landing zone (same names)."""
    for path in files:
        relative = path.relative_to(subject_root / "landing")
        target = reference_root / "landing" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(path, target)


def _cell(name: str, value: Any) -> Any:
    if name == "_source_file" and isinstance(value, str):
        return value.rsplit("/", 1)[-1]  # the two roots differ, the names do not
    if isinstance(value, float):
        return round(value, 6)  # sums may add in another order
    if isinstance(value, list):
        return tuple(_cell(name, v) for v in value)
    return value


def table_rows(spark: SparkSession, root: Path | str, table: str) -> Counter:
    """The multiset of a table's rows, without volatile columns, in comparable form; ``root`` is
    a local folder or an object storage URI."""
    path = LakehousePaths(str(root)).table(table)
    if not storage.exists(f"{path}/_delta_log"):
        return Counter()
    df = spark.read.format("delta").load(path)
    columns = [c for c in df.columns if c not in VOLATILE]
    # As text: PySpark cannot collect every timestamp Python can hold (year 1 after a shift).
    rows = df.selectExpr(*[f"CAST(`{c}` AS STRING) AS `{c}`" if _is_time(df, c) else f"`{c}`" for c in columns])
    return Counter(tuple(_cell(c, r[c]) for c in columns) for r in rows.collect())


def _is_time(df, column: str) -> bool:
    return df.schema[column].dataType.typeName() in ("timestamp", "timestamp_ntz", "date")


def lost_and_duplicated(
    spark: SparkSession, subject: Path | str, reference: Path, tables: list[str] = ALL_TABLES
) -> dict[str, tuple[int, int]]:
    """Per table of ``tables`` (default: every contract table): (rows of the reference missing
    from the subject, rows the subject has beyond the reference). A changed row counts once in each."""
    result = {}
    for table in tables:
        want, got = table_rows(spark, reference, table), table_rows(spark, subject, table)
        result[table] = (sum((want - got).values()), sum((got - want).values()))
    return result
