"""Expectations: named SQL conditions evaluated on every row a streaming table produces.

Like Lakeflow's ``@dp.expect`` family, each has an action for the rows that fail it:

- ``warn``: keep the row, count the failure;
- ``drop``: leave the row out of the table, counted in the run's metadata;
- ``quarantine``: route the row to the table's quarantine table, with the names it failed;
- ``fail``: stop the query; the step fails naming the expectation and a failing row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

Action = Literal["warn", "drop", "quarantine", "fail"]
FAILED_EXPECTATIONS = "failed_expectations"


@dataclass(frozen=True)
class Expectation:
    """A named condition every row should meet; a NULL result counts as failing."""

    name: str
    condition: str
    action: Action = "quarantine"

    def passes(self) -> Column:
        return F.coalesce(F.expr(self.condition), F.lit(False))


def expect(name: str, condition: str) -> Expectation:
    """Warn on failing rows (kept and counted)."""
    return Expectation(name, condition, "warn")


def expect_or_drop(name: str, condition: str) -> Expectation:
    """Drop failing rows from the table (counted)."""
    return Expectation(name, condition, "drop")


def expect_or_quarantine(name: str, condition: str) -> Expectation:
    """Send failing rows to the table's quarantine table."""
    return Expectation(name, condition, "quarantine")


def expect_or_fail(name: str, condition: str) -> Expectation:
    """Fail the run when any row fails."""
    return Expectation(name, condition, "fail")


_FLAG = "__lh_pass_"


def with_expectation_flags(df: DataFrame, expectations: list[Expectation]) -> DataFrame:
    """Add one boolean pass column per expectation and the array of failed names."""
    flagged = df.select("*", *[e.passes().alias(_FLAG + e.name) for e in expectations])
    failed = (
        F.filter(
            F.array(*[F.when(~F.col(_FLAG + e.name), F.lit(e.name)) for e in expectations]),
            lambda name: name.isNotNull(),
        )
        if expectations
        else F.array().cast("array<string>")
    )
    return flagged.withColumn(FAILED_EXPECTATIONS, failed)


def _failed_any(expectations: list[Expectation], action: Action) -> Column:
    result = F.lit(False)
    for e in expectations:
        if e.action == action:
            result = result | ~F.col(_FLAG + e.name)
    return result


def _quarantined(expectations: list[Expectation]) -> Column:
    return _failed_any(expectations, "quarantine")


def _dropped(expectations: list[Expectation]) -> Column:
    """Dropped: failing a ``drop`` expectation and no ``quarantine`` one (those are quarantined)."""
    return _failed_any(expectations, "drop") & ~_quarantined(expectations)


def count_columns(expectations: list[Expectation]) -> list[Column]:
    """The aggregations that count, over flagged rows, the rows failing each expectation plus
    ``__rows`` (all rows), ``__quarantined`` and ``__dropped`` (the rows
    :func:`split_by_expectations` routes there): one pass tells how many each output gets."""
    return [
        F.count(F.lit(1)).alias("__rows"),
        F.count_if(_quarantined(expectations)).alias("__quarantined"),
        F.count_if(_dropped(expectations)).alias("__dropped"),
    ] + [F.sum(F.when(~F.col(_FLAG + e.name), 1).otherwise(0)).alias(e.name) for e in expectations]


def split_by_expectations(
    flagged: DataFrame, expectations: list[Expectation]
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Split flagged rows into (kept, quarantined, dropped); helper columns are removed from kept."""
    quarantined_cond = _quarantined(expectations)
    dropped_cond = _dropped(expectations)
    helpers = [_FLAG + e.name for e in expectations]
    kept = flagged.where(~quarantined_cond & ~_failed_any(expectations, "drop")).drop(*helpers, FAILED_EXPECTATIONS)
    quarantined = flagged.where(quarantined_cond).drop(*helpers)
    dropped = flagged.where(dropped_cond).drop(*helpers)
    return kept, quarantined, dropped


def dropped(expectations: list[Expectation]) -> Column:
    """Over flagged rows: true where the row goes nowhere (neither the table nor its quarantine)."""
    return _dropped(expectations)


def failing(expectation: Expectation) -> Column:
    """Over flagged rows: true where ``expectation`` failed."""
    return ~F.col(_FLAG + expectation.name)
