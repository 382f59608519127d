"""Asset checks declared next to a table, evaluated in the same step after each run.

Expectations decide what happens to each row inside the stream; checks decide whether the
table as a whole can be trusted. ``ERROR`` checks are blocking: when one fails, downstream
assets of the run are skipped and ``dagster asset materialize`` exits non-zero.

Most checks look only at what changed since the last checked materialization (Delta's change
data feed between the two versions, which also catches commits made outside the pipeline);
those that need the whole table say ``scope: full table`` in their metadata. A table still at
the version of its last materialization has no changes: its changes-scoped checks pass without a Spark job;
a full-table check that last passed at the current versions of every table it reads passes again
without one (``reconciles_with``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any, Literal

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.parsing import BLANK

if TYPE_CHECKING:  # the engine gives a check its context when it runs
    from lakehouse_assets.lib.engine.check_context import CheckContext

Severity = Literal["ERROR", "WARN"]
Scope = Literal["changes", "full table"]
SAMPLE = 5


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TableCheck:
    """A named check of one table: a function of a :class:`CheckContext`."""

    name: str
    description: str
    evaluate: Callable[[CheckContext], CheckOutcome]
    severity: Severity = "ERROR"
    scope: Scope = "changes"
    # Which asset the check is on: the table, or its quarantine table.
    target: Literal["table", "quarantine"] = "table"


def _plain(value: Any) -> Any:
    """A metadata value as recorded by Dagster (``IntMetadataValue(3)``) or as written here (3)."""
    return getattr(value, "value", value)


def _sample(df: DataFrame, columns: list[str]) -> str:
    as_text = df.select(*[F.col(c).cast("string") for c in columns]).limit(SAMPLE).collect()
    return ", ".join(str(tuple(r)) if len(r) > 1 else str(r[0]) for r in as_text)


def unique(*keys: str, severity: Severity = "ERROR") -> TableCheck:
    """No two rows share ``keys`` (checked for the keys that changed)."""
    cols = list(keys)

    def evaluate(ctx: CheckContext) -> CheckOutcome:
        if ctx.unchanged():
            return CheckOutcome(True, {"duplicate_keys": 0, "examples": "none"})
        table, changed = ctx.read(), ctx.changes()
        scoped = table if changed is None else table.join(changed.select(*cols).distinct(), cols, "left_semi")
        duplicates = scoped.groupBy(*cols).count().where("count > 1")
        n = duplicates.count()
        return CheckOutcome(n == 0, {"duplicate_keys": n, "examples": _sample(duplicates, cols) if n else "none"})

    return TableCheck(f"unique_{'_'.join(cols)}", f"One row per ({', '.join(cols)}).", evaluate, severity)


def null_counts(ctx: CheckContext, columns: list[str], table: str | None = None) -> dict[str, int]:
    """The nulls in each of ``columns`` among the rows of ``table`` (default: the checked table)
    that changed since the last checked version; only the columns that have any."""
    if ctx.unchanged(table):
        return {}
    rows = ctx.changes(table)
    rows = ctx.read(table) if rows is None else rows
    counts = rows.agg(*[F.count_if(F.col(f"`{c}`").isNull()).alias(c) for c in columns]).collect()[0].asDict()
    return {c: int(n or 0) for c, n in counts.items() if n}


def not_null(*columns: str, severity: Severity = "ERROR") -> TableCheck:
    """Required columns hold no nulls (in the rows that changed)."""

    def evaluate(ctx: CheckContext) -> CheckOutcome:
        nulls = null_counts(ctx, list(columns))
        return CheckOutcome(not nulls, {"null_counts": nulls or "none", "columns": ", ".join(columns)})

    return TableCheck("required_columns_not_null", f"No nulls in {', '.join(columns)}.", evaluate, severity)


def scd2_valid(
    *keys: str, valid_from: str = "valid_from", valid_to: str = "valid_to", is_current: str = "is_current"
) -> TableCheck:
    """SCD2 history is consistent for the keys that changed: at most one current version,
    current means open-ended, and no two versions of a key overlap in time."""
    cols = list(keys)

    def evaluate(ctx: CheckContext) -> CheckOutcome:
        counts = {"keys_with_several_current": 0, "current_flag_mismatches": 0, "overlapping_versions": 0}
        if ctx.unchanged():
            return CheckOutcome(True, {**counts, "examples": "none"})
        table, changed = ctx.read(), ctx.changes()
        scoped = table if changed is None else table.join(changed.select(*cols).distinct(), cols, "left_semi")
        current = scoped.where(F.col(is_current)).groupBy(*cols).count().where("count > 1")
        inconsistent = scoped.where(F.col(is_current) != F.col(valid_to).isNull())
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
        examples = (
            _sample(failing, cols) if counts["keys_with_several_current"] or counts["overlapping_versions"] else ""
        )
        return CheckOutcome(not any(counts.values()), {**counts, "examples": examples or "none"})

    return TableCheck("scd2_history_valid", "One current version per key and no overlapping validity.", evaluate)


def expectation_met(name: str, condition: str, action: str) -> TableCheck:
    """The run's rows that failed the expectation ``name``: none, or a warning with the count
    (what happened to them is the expectation's action: kept, dropped, quarantined)."""

    def evaluate(ctx: CheckContext) -> CheckOutcome:
        report = ctx.report
        if report is None or report.expectation_rows == 0:
            return CheckOutcome(True, {"rows_checked": 0, "action": action})
        failed = report.expectation_failures.get(name, 0)
        return CheckOutcome(failed == 0, {"failed": failed, "rows_checked": report.expectation_rows, "action": action})

    check_name = "expect_" + "".join(c if c.isalnum() else "_" for c in name)
    return TableCheck(check_name, f"Rows meet {condition} (expectation {name}, action: {action}).", evaluate, "WARN")


def schema_unchanged(severity: Severity = "ERROR") -> TableCheck:
    """No column removed or retyped since the last materialization (added columns are fine)."""

    def evaluate(ctx: CheckContext) -> CheckOutcome:
        before = ctx.previous_schema
        if before is not None and ctx.unchanged():  # the version whose schema was recorded
            return CheckOutcome(True, {"removed": "none", "retyped": "none", "added": "none"})
        current = {f.name: f.dataType.simpleString() for f in ctx.read().schema.fields}
        if before is None:
            return CheckOutcome(True, {"columns": len(current), "compared_with": "nothing (first run)"})
        removed = sorted(set(before) - set(current))
        retyped = sorted(
            f"{c}: {before[c]} -> {current[c]}" for c in set(before) & set(current) if before[c] != current[c]
        )
        return CheckOutcome(
            not removed and not retyped,
            {
                "removed": ", ".join(removed) or "none",
                "retyped": ", ".join(retyped) or "none",
                "added": ", ".join(sorted(set(current) - set(before))) or "none",
            },
        )

    return TableCheck("schema_unchanged", "No column removed or retyped since the last run.", evaluate, severity)


def reconciles_with(
    other: str, this_sql: dict[str, str], other_sql: dict[str, str], tolerance: float = 1e-6
) -> TableCheck:
    """Aggregates of this table equal aggregates of ``other`` (full scans of both)."""

    name = f"reconciles_with_{other}"

    def evaluate(ctx: CheckContext) -> CheckOutcome:
        ids = (ctx.table_id(), ctx.table_id(other))
        # What was compared: the check's definition and both tables' identities and versions.
        compared = {
            "compared": hashlib.sha256(repr((other, this_sql, other_sql, tolerance, ids)).encode()).hexdigest()[:16],
            "delta_version": ctx.version(),
            f"{other}_delta_version": ctx.version(other),
        }
        last = ctx.previous_outcomes.get(name)
        if (
            None not in ids
            and last
            and last.passed
            and all(_plain(last.metadata.get(k)) == v for k, v in compared.items())
        ):
            # The same tables at the same versions hold the same rows: the full scans would pass again.
            return CheckOutcome(True, {**last.metadata, "evaluated": "carried over (neither table changed)"})
        # Both aggregates in one Spark job (one round trip, the two scans side by side).
        mine_df = ctx.read().agg(*[F.expr(e).alias(f"this_{k}") for k, e in this_sql.items()])
        theirs_df = ctx.read(other).agg(*[F.expr(e).alias(f"other_{k}") for k, e in other_sql.items()])
        both = mine_df.crossJoin(theirs_df).collect()[0].asDict()
        mine = {k: both[f"this_{k}"] for k in this_sql}
        theirs = {k: both[f"other_{k}"] for k in other_sql}
        metadata: dict[str, Any] = {"scope": "full table"}
        passed = True
        for key in this_sql:
            a, b = float(mine[key] or 0), float(theirs[key] or 0)
            metadata[f"{key}"] = a
            metadata[f"{key}_in_{other}"] = b
            passed &= math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
        return CheckOutcome(passed, {**metadata, **compared, "evaluated": "full scan"})

    return TableCheck(name, f"Totals equal those of {other}.", evaluate, "ERROR", "full table")


def landed_lines_conserved(source_file: str = "_source_file", quarantine: str | None = None) -> TableCheck:
    """Every non-blank line of the files this run ingested is in the table or its quarantine.

    The files are the ones the run's micro-batches named (found in their counting pass: no job of
    the check's own) when nothing else changed the tables since they were last checked; else the
    files of every row changed since then (the change data feed, one job)."""

    def touched_files(ctx: CheckContext) -> set[str]:
        tables = [ctx.table] + ([quarantine] if quarantine else [])
        if all(ctx.unchanged(t) for t in tables):
            return set()
        reported = ctx.report.landed_files if ctx.report is not None and source_file == "_source_file" else None
        if reported is not None and all(ctx.written_by_runs_only(t) for t in tables):
            return set(reported)
        sources = []  # the source file of every row changed in the table or its quarantine
        for name in (t for t in tables if not ctx.unchanged(t)):
            changed = ctx.changes(name, kinds=("insert", "update_preimage", "update_postimage", "delete"))
            sources.append((ctx.read(name) if changed is None else changed).select(source_file))
        rows = reduce(DataFrame.unionByName, sources).distinct().collect()
        return {r[0] for r in rows if not r[0].startswith("kafka://")}  # files only, not messages

    def evaluate(ctx: CheckContext) -> CheckOutcome:
        tables = [ctx.table] + ([quarantine] if quarantine else [])
        touched = touched_files(ctx)
        if not touched:
            return CheckOutcome(True, {"files_checked": 0})
        files = sorted(touched)
        lines = (
            ctx.spark.read.text(files)
            .where(~F.col("value").rlike(BLANK))
            .groupBy(F.col("_metadata.file_path").alias("file"))
            .count()
        )
        stored = None
        for name in tables:
            part = (
                ctx.read(name).where(F.col(source_file).isin(files)).groupBy(F.col(source_file).alias("file")).count()
            )
            stored = part if stored is None else stored.unionByName(part)
        assert stored is not None
        stored = stored.groupBy("file").agg(F.sum("count").alias("stored"))
        mismatched = lines.join(stored, "file", "full_outer").where("coalesce(count, 0) <> coalesce(stored, 0)")
        n = mismatched.count()
        return CheckOutcome(
            n == 0,
            {
                "files_checked": len(files),
                "files_mismatched": n,
                "examples": _sample(mismatched.fillna(0, ["count", "stored"]), ["file", "count", "stored"])
                if n
                else "none",
            },
        )

    return TableCheck(
        "landed_lines_conserved",
        "Non-blank lines of each ingested file = its rows here + in the quarantine.",
        evaluate,
    )
