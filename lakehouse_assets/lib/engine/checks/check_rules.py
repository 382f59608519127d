"""How the engine evaluates each check rule a table declares (``declare/checks.py``).

A rule's evaluation is a function of the rule and a :class:`CheckContext`; most read only the
rows changed since the last checked version, and run no Spark job when the table did not move.
"""

from __future__ import annotations

import decimal
import numbers
from collections.abc import Callable
from typing import Any, TypeVar

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare import checks as rules
from lakehouse_assets.lib.declare.checks import CheckOutcome, TableCheck
from lakehouse_assets.lib.declare.sql_names import column
from lakehouse_assets.lib.engine.checks import conservation, reconcile, unique_keys
from lakehouse_assets.lib.engine.checks.check_context import CheckContext
from lakehouse_assets.lib.engine.checks.check_context import examples as example_rows
from lakehouse_assets.lib.engine.freshness import caught_up
from lakehouse_assets.lib.engine.intake import check as set_aside_check
from lakehouse_assets.lib.engine.intake.set_aside import lines_of_files

SAMPLE = 5
Rule = TypeVar("Rule")
_EVALUATORS: dict[type, Callable[[Any, CheckContext], CheckOutcome]] = {}


def _evaluates(kind: type[Rule]) -> Callable[[Callable[[Rule, CheckContext], CheckOutcome]], Any]:
    def register(fn: Callable[[Rule, CheckContext], CheckOutcome]) -> Callable[[Rule, CheckContext], CheckOutcome]:
        _EVALUATORS[kind] = fn
        return fn

    return register


def evaluate(check: TableCheck, ctx: CheckContext) -> CheckOutcome:
    """The outcome of ``check`` on the context's table."""
    return _EVALUATORS[type(check.rule)](check.rule, ctx)


def _sample(df: DataFrame, columns: list[str]) -> str:
    return example_rows(df, columns, SAMPLE)


_evaluates(rules.UniqueKeys)(unique_keys.evaluate)
# The kinds whose evaluation follows on from their last one (looked up before the run), besides
# every full-table check, given the columns the table's writer keeps unique.
_FOLLOWS_LAST: dict[type, Callable[[Any, tuple[str, ...] | None], bool]] = {rules.UniqueKeys: unique_keys.proven}


def follows_last_evaluation(check: TableCheck, writer_keys: tuple[str, ...] | None) -> bool:
    """``check``'s evaluation starts from its last one, to be looked up before the run."""
    follows = _FOLLOWS_LAST.get(type(check.rule))
    return check.scope == "full table" or (follows is not None and follows(check.rule, writer_keys))


def null_counts(ctx: CheckContext, columns: list[str], table: str | None = None) -> dict[str, int]:
    """The nulls in each of ``columns`` among the rows of ``table`` (default: the checked table)
    that changed since the last checked version; only the columns that have any."""
    if ctx.unchanged(table):
        return {}
    changed = ctx.changes(table)
    rows = lines_of_files(ctx.read(table) if changed is None else changed)
    counts = rows.agg(*[F.count_if(column(c).isNull()).alias(c) for c in columns]).collect()[0].asDict()
    return {c: int(n or 0) for c, n in counts.items() if n}


@_evaluates(rules.RequiredColumns)
def _not_null(rule: rules.RequiredColumns, ctx: CheckContext) -> CheckOutcome:
    nulls = null_counts(ctx, list(rule.columns))
    return CheckOutcome(not nulls, {"null_counts": nulls or "none", "columns": ", ".join(rule.columns)})


@_evaluates(rules.Scd2History)
def _scd2_valid(rule: rules.Scd2History, ctx: CheckContext) -> CheckOutcome:
    cols, valid_from, valid_to = list(rule.keys), rule.valid_from, rule.valid_to
    counts = {"keys_with_several_current": 0, "current_flag_mismatches": 0, "overlapping_versions": 0}
    if ctx.unchanged():
        return CheckOutcome(True, {**counts, "examples": "none"})
    scoped = unique_keys.changed_keys(ctx, cols)
    current = scoped.where(F.col(rule.is_current)).groupBy(*cols).count().where("count > 1")
    inconsistent = scoped.where(F.col(rule.is_current) != F.col(valid_to).isNull())
    ordered = Window.partitionBy(*cols).orderBy(valid_from)
    overlapping = scoped.withColumn("__next_from", F.lead(valid_from).over(ordered)).where(
        F.col("__next_from").isNotNull() & (F.col(valid_to).isNull() | (F.col(valid_to) > F.col("__next_from")))
    )
    counts = {
        "keys_with_several_current": current.count(),
        "current_flag_mismatches": inconsistent.count(),
        "overlapping_versions": overlapping.count(),
    }
    failing = current.unionByName(overlapping.select(*cols).withColumn("count", F.lit(0)))
    examples = _sample(failing, cols) if counts["keys_with_several_current"] or counts["overlapping_versions"] else ""
    return CheckOutcome(not any(counts.values()), {**counts, "examples": examples or "none"})


@_evaluates(rules.ExpectationMet)
def _expectation_met(rule: rules.ExpectationMet, ctx: CheckContext) -> CheckOutcome:
    report = ctx.report
    if report is None or report.expectation_rows == 0:
        return CheckOutcome(True, {"rows_checked": 0, "action": rule.action})
    failed = report.expectation_failures.get(rule.expectation, 0)
    return CheckOutcome(failed == 0, {"failed": failed, "rows_checked": report.expectation_rows, "action": rule.action})


@_evaluates(rules.SchemaUnchanged)
def _schema_unchanged(rule: rules.SchemaUnchanged, ctx: CheckContext) -> CheckOutcome:
    before = ctx.previous_schema
    if before is not None and ctx.unchanged():  # the version whose schema was recorded
        return CheckOutcome(True, {"removed": "none", "retyped": "none", "added": "none"})
    current = {f.name: f.dataType.simpleString() for f in ctx.read().schema.fields}
    if before is None:
        return CheckOutcome(True, {"columns": len(current), "compared_with": "nothing (first run)"})
    removed = sorted(set(before) - set(current))
    retyped = sorted(f"{c}: {before[c]} -> {current[c]}" for c in set(before) & set(current) if before[c] != current[c])
    return CheckOutcome(
        not removed and not retyped,
        {
            "removed": ", ".join(removed) or "none",
            "retyped": ", ".join(retyped) or "none",
            "added": ", ".join(sorted(set(current) - set(before))) or "none",
        },
    )


_evaluates(rules.ReconcilesWith)(reconcile.evaluate)
_evaluates(rules.NoFilesSetAside)(set_aside_check.evaluate)
_evaluates(rules.LandedLinesConserved)(conservation.evaluate)


@_evaluates(rules.QuarantineShare)
def _quarantine_rate(rule: rules.QuarantineShare, ctx: CheckContext) -> CheckOutcome:
    report = ctx.report
    if report is None or report.expectation_rows == 0:
        return CheckOutcome(True, {"rows_checked": 0, "threshold": rule.max_share})
    share = report.rows_quarantined / report.expectation_rows
    return CheckOutcome(
        share <= rule.max_share,
        {
            "quarantine_share": round(share, 4),
            "threshold": rule.max_share,
            "rows_quarantined": report.rows_quarantined,
            "rows_checked": report.expectation_rows,
        },
    )


@_evaluates(rules.QuarantineTraceable)
def _quarantine_traceable(rule: rules.QuarantineTraceable, ctx: CheckContext) -> CheckOutcome:
    if not rule.columns:
        return CheckOutcome(True, {"columns": "none declared"})
    missing = null_counts(ctx, list(rule.columns), rule.quarantine)
    return CheckOutcome(
        not missing,
        {
            "rows_missing_a_column": sum(missing.values()),
            "null_counts": missing or "none",
            "columns": ", ".join(rule.columns),
        },
    )


def _rows_in_scope(ctx: CheckContext, whole_table: bool) -> DataFrame:
    changed = None if whole_table else ctx.changes()
    return ctx.read() if changed is None else changed


@_evaluates(rules.RowsSatisfy)
def _rows_satisfy(rule: rules.RowsSatisfy, ctx: CheckContext) -> CheckOutcome:
    if not rule.whole_table and ctx.unchanged():
        return CheckOutcome(True, {"condition": rule.condition, "rows_checked": 0, "rows_failing": 0})
    failing = F.expr(f"NOT coalesce(({rule.condition}), false)")
    rows = _rows_in_scope(ctx, rule.whole_table)
    checked, failed = rows.agg(F.count(F.lit(1)), F.count_if(failing)).first() or (0, 0)
    examples = _sample(rows.where(failing), rows.columns[:4]) if failed else "none"
    metadata = {"condition": rule.condition, "rows_checked": checked, "rows_failing": failed, "examples": examples}
    return CheckOutcome(failed == 0, metadata)


@_evaluates(rules.UserFunction)
def _user_function(rule: rules.UserFunction, ctx: CheckContext) -> CheckOutcome:
    if not rule.whole_table and ctx.unchanged():
        return CheckOutcome(True, {"rows_checked": 0})
    found = rule.function(_rows_in_scope(ctx, rule.whole_table))
    if isinstance(found, CheckOutcome):
        if not isinstance(found.metadata, dict):
            raise TypeError(f"a custom check's CheckOutcome.metadata is a dict, not {type(found.metadata).__name__}")
        return CheckOutcome(bool(found.passed), {str(k): _metadata_value(v) for k, v in found.metadata.items()})
    if not (isinstance(found, bool) or type(found).__name__ == "bool_"):  # numpy's bool too
        raise TypeError(f"a custom check returns a bool or a CheckOutcome, not {type(found).__name__}")
    return CheckOutcome(bool(found))


@_evaluates(rules.CaughtUpWithLanding)
def _caught_up(rule: rules.CaughtUpWithLanding, ctx: CheckContext) -> CheckOutcome:
    return caught_up(ctx.paths, ctx.table, rule.max_behind_s, counted=ctx.declared_tables)


def _metadata_value(value: Any) -> Any:
    """A value Dagster records as metadata: numbers, text, booleans and None as they are (numpy
    and Decimal numbers as Python ones), anything else as its text."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, (numbers.Real, decimal.Decimal)):
        return float(value)
    return str(value)
