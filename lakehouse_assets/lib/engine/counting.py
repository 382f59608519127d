"""The Spark actions behind expectations: one aggregation that counts what each expectation
caught in a micro-batch, and a failing row to quote when a ``fail`` expectation stops the run.
The declarations (:mod:`lakehouse_assets.lib.declare.expectations`) only build the columns."""

from __future__ import annotations

from pyspark.sql import DataFrame

from lakehouse_assets.lib.declare.expectations import Expectation, count_columns, failing


def expectation_counts(flagged: DataFrame, expectations: list[Expectation]) -> dict[str, int]:
    """Rows failing each expectation, plus ``__rows``, ``__quarantined`` and ``__dropped``, in
    one aggregation over rows flagged by ``with_expectation_flags``."""
    row = flagged.agg(*count_columns(expectations)).first()
    assert row is not None  # an aggregate has one row
    return {k: int(row[k] or 0) for k in row.asDict()}


def first_failure(flagged: DataFrame, expectation: Expectation) -> str:
    """One row that failed ``expectation``, as text ("" when none did)."""
    row = flagged.where(failing(expectation)).limit(1).collect()
    return str(row[0].asDict()) if row else ""
