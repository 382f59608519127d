"""The example's tables as stored, against :func:`orders_answers.expected_rows`: rows missing and
extra per table (multisets, so a duplicated row counts)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path

from pyspark.sql import SparkSession

from verification import orders_answers as answers


def _plain(value: object) -> object:
    return value.strftime("%Y-%m-%dT%H:%M:%S") if isinstance(value, datetime) else value


def stored_rows(spark: SparkSession, tables: Path, name: str) -> Counter:
    frame = spark.read.format("delta").load(str(tables / name)).select(*answers.COMPARED_COLUMNS[name])
    return Counter(tuple(_plain(v) for v in row) for row in frame.collect())


def tally(spark: SparkSession, tables: Path, expected: dict[str, Counter]) -> dict[str, tuple[int, int]]:
    """(missing, extra) rows per table; a wrong aggregate row counts once in each."""
    result = {}
    for name, want in expected.items():
        got = stored_rows(spark, tables, name)
        result[name] = (sum((want - got).values()), sum((got - want).values()))
    return result
