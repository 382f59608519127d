"""``unique``: no two rows share the keys, for the cost of what the run wrote where it can.

A table whose own writer keeps the keys unique (a ``merge`` sink's keys: one source row per
key, a stored key matched and never inserted again; an SCD sink's rows) can only gain a
duplicate through a commit made outside the pipeline. When the last evaluation passed and every
commit since is one of the writer's micro-batches (each carries its transaction id), the check
reads only the change data feed of those commits: a key inserted twice there is a duplicate. Any
other case, every :data:`FULL_SCAN_EVERY`-th evaluation and any failure read the whole table.
A table whose writer proves nothing is checked for the keys that changed against the whole
table, as before.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.checks import CheckOutcome, UniqueKeys
from lakehouse_assets.lib.engine.checks.check_context import CheckContext, examples
from lakehouse_assets.lib.engine.checks.reconcile import plain
from lakehouse_assets.lib.engine.state import delta_log

# Evaluations from the writes trust the last one's answer: a whole-table check proves it again.
FULL_SCAN_EVERY = 20


def proven(rule: UniqueKeys, writer_keys: tuple[str, ...] | None) -> bool:
    """The table's writer keeps exactly ``rule.keys`` unique. (Fewer keys would not do: a
    whole-table check of more keys says nothing of rows sharing the writer's, which one MERGE
    update can turn into duplicates without inserting a row.)"""
    return bool(writer_keys) and set(writer_keys or ()) == set(rule.keys)


def evaluate(rule: UniqueKeys, ctx: CheckContext) -> CheckOutcome:
    """The check's outcome, with how it was found."""
    keys = list(rule.keys)
    table_id = ctx.table_id() if proven(rule, ctx.writer_keys) else None
    if table_id is None:  # no proof, or a table whose id its log no longer shows in its first commits
        if ctx.unchanged():
            return CheckOutcome(True, {"duplicate_keys": 0, "examples": "none"})
        return _outcome(changed_keys(ctx, keys), keys, {"evaluated": "the changed keys against the whole table"})
    version = ctx.version()
    follow = {"delta_version": version, "table_id": table_id}
    last = ctx.previous_outcomes.get(rule.check_name)
    since = _followable(ctx, last, follow) if last is not None else None
    if last is None or since is None:
        return _whole_table(ctx, keys, follow)
    count = int(plain(last.metadata.get("evaluations_since_full_scan")) or 0) + 1
    if since == version:
        return CheckOutcome(True, {**last.metadata, **follow, "evaluated": "carried over (no commit since)"})
    if count >= FULL_SCAN_EVERY:
        return _whole_table(ctx, keys, follow)
    try:
        inserted = ctx.feed(None, since + 1, version).where(F.col("_change_type") == "insert")
        found = _outcome(inserted, keys, {})
    except Exception:  # noqa: BLE001 - a version without its change data feed (a lost engine fails the next read too)
        return _whole_table(ctx, keys, follow)
    if not found.passed:
        return _whole_table(ctx, keys, follow)
    evaluated = f"the keys inserted since version {since} (the table's own MERGE keeps the rest unique)"
    return CheckOutcome(
        True, {**found.metadata, **follow, "evaluated": evaluated, "evaluations_since_full_scan": count}
    )


def changed_keys(ctx: CheckContext, keys: list[str]) -> DataFrame:
    """The table's rows whose keys changed since the last check (every row on a first check)."""
    table, changed = ctx.read(), ctx.changes()
    return table if changed is None else table.join(changed.select(*keys).distinct(), keys, "left_semi")


def _followable(ctx: CheckContext, last: CheckOutcome, follow: dict[str, Any]) -> int | None:
    """The version the last evaluation found the table unique at, when only the table's own
    micro-batch writes committed since; None when the whole table must answer."""
    if not last.passed:
        return None
    try:
        since = int(plain(last.metadata["delta_version"]))
        same_table = plain(last.metadata["table_id"]) == follow["table_id"]
    except (KeyError, TypeError, ValueError):
        return None  # an evaluation recorded before these figures were
    if not same_table or since > follow["delta_version"]:
        return None
    path = ctx.paths.table(ctx.table)
    return since if delta_log.micro_batch_writes(path, since, follow["delta_version"]) is not None else None


def _whole_table(ctx: CheckContext, keys: list[str], follow: dict[str, Any]) -> CheckOutcome:
    extra = {**follow, "evaluated": "every key of the whole table", "evaluations_since_full_scan": 0}
    return _outcome(ctx.read(), keys, extra)


def _outcome(rows: DataFrame, keys: list[str], extra: dict[str, Any]) -> CheckOutcome:
    duplicates = rows.groupBy(*keys).count().where("count > 1")
    n = duplicates.count()
    return CheckOutcome(n == 0, {"duplicate_keys": n, "examples": examples(duplicates, keys) if n else "none", **extra})
