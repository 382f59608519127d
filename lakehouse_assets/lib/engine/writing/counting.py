"""The Spark actions behind expectations: one aggregation that counts what each expectation
caught in a micro-batch, and a failing row to quote when a ``fail`` expectation stops the run.
The declarations (:mod:`lakehouse_assets.lib.declare.expectations`) only build the columns."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.expectations import Expectation, count_columns, dropped, failing

SOURCE_FILE = "_source_file"
_FILES = "__files"


def expectation_counts(flagged: DataFrame, expectations: list[Expectation]) -> tuple[dict[str, int], list[str] | None]:
    """Rows failing each expectation, plus ``__rows``, ``__quarantined`` and ``__dropped``, in
    one aggregation over rows flagged by ``with_expectation_flags``; in the same pass, the landed
    files the stored rows (kept or quarantined) came from (``_source_file``; Kafka messages left
    out; None without that column)."""
    files = SOURCE_FILE in flagged.columns
    landed = F.when(~F.col(SOURCE_FILE).startswith("kafka://") & ~dropped(expectations), F.col(SOURCE_FILE))
    row = flagged.agg(*count_columns(expectations), *([F.collect_set(landed).alias(_FILES)] if files else [])).first()
    assert row is not None  # an aggregate has one row
    counts = {k: int(row[k] or 0) for k in row.asDict() if k != _FILES}
    return counts, (sorted(row[_FILES]) if files else None)


def first_failure(flagged: DataFrame, expectation: Expectation) -> str:
    """One row that failed ``expectation``, as text ("" when none did)."""
    row = flagged.where(failing(expectation)).limit(1).collect()
    return str(row[0].asDict()) if row else ""
