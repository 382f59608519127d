"""``landed_lines_conserved``: every non-blank line of every landed file the table took in is a
row of the table or of its quarantine, counted per file.

Only the files that changed are counted: those the run's micro-batches named when nothing else
changed the tables since the last check, else those of every row changed since."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.checks import CheckOutcome, LandedLinesConserved
from lakehouse_assets.lib.declare.parsing import BLANK
from lakehouse_assets.lib.engine.checks.check_context import CheckContext
from lakehouse_assets.lib.engine.intake.bounds import LINE_MAX_OPTION, hadoop_line_bound
from lakehouse_assets.lib.engine.intake.set_aside import lines_of_files
from lakehouse_assets.lib.engine.reading.landing_names import NO_GLOB, as_landed
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.settings import current

FIRST_SCOPE = (
    "this run's only: a first evaluation here, with no earlier one to go on from; files landed before not re-counted"
)


def _touched_files(
    rule: LandedLinesConserved, ctx: CheckContext, tables: list[str]
) -> tuple[list[str], bool, str | None]:
    """The files to check, in order: those the run's micro-batches named (in their counting pass) when
    nothing else changed the tables since the last check, or when there is no last check to go
    on from (:func:`_first_evaluation`), else the files of every row changed since (the change
    feed, one job); whether their stored rows are all in the appends; and words when the files
    are fewer than the changes (a first evaluation)."""
    if all(ctx.unchanged(t) for t in tables):
        return [], False, None
    reported = ctx.report.landed_files if ctx.report is not None and rule.source_file == "_source_file" else None
    written = [ctx.written_by_runs(t) for t in tables] if reported is not None else []
    if reported is not None and None not in written:
        return sorted(reported), all(kind == "appends" for kind in written), None
    if reported is not None and _first_evaluation(ctx):
        return sorted(reported), False, FIRST_SCOPE
    sources = []  # the source file of every row changed in the table or its quarantine
    for name in (t for t in tables if not ctx.unchanged(t)):
        changed = ctx.changes(name, kinds=("insert", "update_preimage", "update_postimage", "delete"))
        sources.append(lines_of_files(ctx.read(name) if changed is None else changed).select(rule.source_file))
    found = reduce(DataFrame.unionByName, sources).distinct().collect()
    return sorted({r[0] for r in found if not r[0].startswith("kafka://")}), False, None  # files, not messages


def _first_evaluation(ctx: CheckContext) -> bool:
    """No earlier evaluation recorded a version of the table (a first run, or a table that was
    written before this Dagster instance existed). Re-counting every file ever landed would then
    read a whole history (100,000 files: over 11 minutes) inside a blocking check, so the first
    evaluation counts the run's own files and says so; later ones go on from its version."""
    return ctx.previous_versions.get(ctx.table) is None


def _stored_rows(ctx: CheckContext, name: str, appended: bool) -> DataFrame | None:
    """The change feed of the appends since the last check when they hold every stored row of the
    checked files (it reads the new commits only), else the whole table (which first rebuilds
    its file list at the new version: Delta's state reconstruction, ~0.7 s per table)."""
    if not appended:
        return ctx.read(name)
    return None if ctx.unchanged(name) else ctx.changes(name, kinds=("insert",))


def evaluate(rule: LandedLinesConserved, ctx: CheckContext) -> CheckOutcome:
    tables = [ctx.table] + ([rule.quarantine] if rule.quarantine else [])
    touched, appended, scope = _touched_files(rule, ctx, tables)
    words = {"files_counted": scope} if scope else {}
    # A file archived or deleted since (landing retention) can no longer be counted.
    files = [f for f in touched if storage.exists(f)]
    if not files:
        return CheckOutcome(True, {"files_checked": 0, "files_no_longer_landed": len(touched), **words})
    # One Spark job: every non-blank landed line and every stored row tagged with its file,
    # counted per file in one aggregation; only the files whose counts differ come back.
    lines = (
        ctx.spark.read.option(NO_GLOB, "false")  # a file named ev*.json is a name, not a pattern
        .option(LINE_MAX_OPTION, str(hadoop_line_bound(current().landing_max_line_bytes)))  # never a line whole
        .text(files)
        .where(~F.col("value").rlike(BLANK))
        .select(
            as_landed(F.col("_metadata.file_path")).alias("file"), F.lit(1).alias("landed"), F.lit(0).alias("stored")
        )
    )
    tagged = (F.col(rule.source_file).alias("file"), F.lit(0).alias("landed"), F.lit(1).alias("stored"))
    scopes = [_stored_rows(ctx, t, appended) for t in tables]
    stored = [
        lines_of_files(rows).where(F.col(rule.source_file).isin(files)).select(*tagged)
        for rows in scopes
        if rows is not None
    ]
    mismatched = (
        reduce(DataFrame.unionByName, [lines, *stored])
        .groupBy("file")
        .agg(F.sum("landed").alias("count"), F.sum("stored").alias("stored"))
        .where("count <> stored")
        .collect()
    )
    examples = ", ".join(str((r["file"], r["count"], r["stored"])) for r in mismatched[:5])
    return CheckOutcome(
        not mismatched,
        {
            "files_checked": len(files),
            "files_no_longer_landed": len(touched) - len(files),
            "files_mismatched": len(mismatched),
            "examples": examples or "none",
            "stored_rows_read_from": "the appends since the last check" if appended else "the whole table",
            **words,
        },
    )
