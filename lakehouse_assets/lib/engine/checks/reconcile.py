"""``reconciles_with``: aggregates of a table equal aggregates of another.

The check is evaluated in the cheapest way that gives the full-scan answer: carried over when
neither table moved since it last passed; followed through both tables' change data feeds when
every aggregate is additive (``sum``, ``count``, ``count_if``, with or without ``FILTER``), so
the totals of the last passing evaluation plus the change since give today's; by full scans of
both tables otherwise, every :data:`FULL_SCAN_EVERY`-th evaluation, and to confirm a failure.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.checks import CheckOutcome, ReconcilesWith
from lakehouse_assets.lib.engine.checks.check_context import CheckContext

# Incremental evaluations trust the last one's totals: a full scan now and then proves them again.
FULL_SCAN_EVERY = 20
_AGGREGATE = re.compile(r"(sum|count|count_if)\s*\(", re.IGNORECASE)
_FILTER = re.compile(r"FILTER\s*\(\s*WHERE\s", re.IGNORECASE)
_SIGN = "CASE WHEN _change_type IN ('insert', 'update_postimage') THEN 1 ELSE -1 END"


def plain(value: Any) -> Any:
    """A metadata value as recorded by Dagster (``IntMetadataValue(3)``) or as written here (3)."""
    return getattr(value, "value", value)


def _closing(text: str, start: int) -> int | None:
    """The index of the parenthesis closing the one at ``start`` (quotes skipped), or None; -1
    when a comma stands at the top level inside them (several arguments)."""
    depth, quote = 0, ""
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"`":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        elif c == "," and depth == 1:
            return -1
    return None


def signed(expression: str) -> str | None:
    """The aggregate that, over a change data feed whose rows carry ``_sign`` (+1 inserted or after
    an update, -1 deleted or before one), gives the change of ``expression``; None when it is not
    one additive aggregate (``sum(x)``, ``count(x)``, ``count(*)``, ``count_if(c)``, each with
    or without ``FILTER (WHERE ...)``; not DISTINCT, not arithmetic on aggregates).

    :param expression: one aggregate expression as declared in ``reconciles_with``.
    """
    text = expression.strip()
    found = _AGGREGATE.match(text)
    close = _closing(text, found.end() - 1) if found else None
    if found is None or close is None or close < 0:
        return None
    argument, rest = text[found.end() : close].strip(), text[close + 1 :].strip()
    if not argument or argument.split(None, 1)[0].upper() in ("DISTINCT", "ALL"):
        return None
    if rest and not (_FILTER.match(rest) and _closing(rest, rest.index("(")) == len(rest) - 1):
        return None
    kind = found.group(1).lower()
    if kind == "sum":
        body = f"({argument}) * _sign"
    elif kind == "count":
        body = "_sign" if argument == "*" else f"CASE WHEN ({argument}) IS NOT NULL THEN _sign ELSE 0 END"
    else:
        body = f"CASE WHEN ({argument}) THEN _sign ELSE 0 END"
    return f"sum({body}) {rest}".strip()


def evaluate(rule: ReconcilesWith, ctx: CheckContext) -> CheckOutcome:
    """The check's outcome, with the totals, the versions compared and how they were found."""
    other = rule.other
    ids = (ctx.table_id(), ctx.table_id(other))
    # What was compared: the check's definition and both tables' identities and versions.
    definition = repr((other, rule.this_sql, rule.other_sql, rule.tolerance, ids))
    compared = {
        "compared": hashlib.sha256(definition.encode()).hexdigest()[:16],
        "delta_version": ctx.version(),
        f"{other}_delta_version": ctx.version(other),
    }
    last = ctx.previous_outcomes.get(rule.check_name)
    if None in ids or last is None or not last.passed or plain(last.metadata.get("compared")) != compared["compared"]:
        return _full_scan(rule, ctx, compared)
    if all(plain(last.metadata.get(k)) == v for k, v in compared.items()):
        # The same tables at the same versions hold the same rows: the full scans would pass again.
        return CheckOutcome(True, {**last.metadata, "evaluated": "carried over (neither table changed)"})
    followed = _followed(rule, ctx, last.metadata, compared)
    return followed if followed is not None and followed.passed else _full_scan(rule, ctx, compared)


def _outcome(rule: ReconcilesWith, totals: dict[str, tuple[float, float]], extra: dict[str, Any]) -> CheckOutcome:
    metadata: dict[str, Any] = {"scope": "full table"}
    passed = True
    for key, (mine, theirs) in totals.items():
        metadata[key] = mine
        metadata[f"{key}_in_{rule.other}"] = theirs
        passed &= math.isclose(mine, theirs, rel_tol=rule.tolerance, abs_tol=rule.tolerance)
    return CheckOutcome(passed, {**metadata, **extra})


def _full_scan(rule: ReconcilesWith, ctx: CheckContext, compared: dict[str, Any]) -> CheckOutcome:
    # Both aggregates in one Spark job (one round trip, the two scans side by side).
    mine = ctx.read().agg(*[F.expr(e).alias(f"this_{k}") for k, e in rule.this_sql.items()])
    theirs = ctx.read(rule.other).agg(*[F.expr(e).alias(f"other_{k}") for k, e in rule.other_sql.items()])
    both = mine.crossJoin(theirs).collect()[0].asDict()
    totals = {k: (float(both[f"this_{k}"] or 0), float(both[f"other_{k}"] or 0)) for k in rule.this_sql}
    return _outcome(rule, totals, {**compared, "evaluated": "full scan", "evaluations_since_full_scan": 0})


def _all_signed(aggregates: dict[str, str]) -> dict[str, str] | None:
    """Each aggregate's change expression (:func:`signed`), or None when one has none."""
    changes: dict[str, str] = {}
    for key, expression in aggregates.items():
        change = signed(expression)
        if change is None:
            return None
        changes[key] = change
    return changes


def _followed(
    rule: ReconcilesWith, ctx: CheckContext, last: dict[str, Any], compared: dict[str, Any]
) -> CheckOutcome | None:
    """The totals of the last passing evaluation plus the change since, from the change data feed
    of each table that moved (one Spark job); None when a full scan must answer instead."""
    other, since = rule.other, int(plain(last.get("evaluations_since_full_scan")) or 0) + 1
    mine, theirs = _all_signed(rule.this_sql), _all_signed(rule.other_sql)
    if since >= FULL_SCAN_EVERY or mine is None or theirs is None:
        return None
    try:
        before = {k: (float(plain(last[k])), float(plain(last[f"{k}_in_{other}"]))) for k in rule.this_sql}
        sides = [
            (None, "this", int(plain(last["delta_version"]))),
            (other, "other", int(plain(last[f"{other}_delta_version"]))),
        ]
    except (KeyError, TypeError, ValueError):
        return None  # an evaluation recorded before these figures were
    if any(ctx.version(name) < version for name, _, version in sides):
        return None  # a log older than the one last checked (a copy put back): no feed leads from there
    frames: list[DataFrame] = []
    try:
        for (name, side, version), expressions in zip(sides, (mine, theirs), strict=True):
            if ctx.version(name) > version:
                changes = ctx.feed(name, version + 1, ctx.version(name)).withColumn("_sign", F.expr(_SIGN))
                frames.append(changes.agg(*[F.expr(e).alias(f"{side}_{k}") for k, e in expressions.items()]))
        change = frames[0] if len(frames) == 1 else frames[0].crossJoin(frames[1])
        moved = change.collect()[0].asDict()
    except PySparkException:
        # A version without its change data feed (not enabled then, or cleaned up), a schema
        # change the feed cannot span: the full scans answer (and fail alike if the engine is gone).
        return None
    totals = {
        k: (a + float(moved.get(f"this_{k}") or 0), b + float(moved.get(f"other_{k}") or 0))
        for k, (a, b) in before.items()
    }
    evaluated = "followed through the change data feeds"
    return _outcome(rule, totals, {**compared, "evaluated": evaluated, "evaluations_since_full_scan": since})
