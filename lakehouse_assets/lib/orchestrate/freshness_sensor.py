"""The freshness sensor: every minute, how far behind what has landed each table with a
``caught_up_with_landing`` check is, reported as that check's evaluation without a run
(:mod:`lakehouse_assets.lib.engine.freshness`: file listings, no Spark). It reports a check when
its outcome changes, and a failing one again every :data:`REPEAT_FAILING_S` so the UI shows how
far behind it is now; the tick's log line lists the tables behind."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import dagster as dg

from lakehouse_assets.lib.declare.check_kinds import CaughtUpWithLanding
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.freshness import caught_up, feeding_folders, late_files, late_listings
from lakehouse_assets.lib.paths import LakehousePaths

SENSOR_NAME = "lakehouse_freshness"
REPEAT_FAILING_S = 600


def _watched(tables: Sequence[TableSpec]) -> list[tuple[str, str, float, str]]:
    """(table, check, limit in seconds, severity) of each caught_up_with_landing check."""
    return [
        (t.name, c.name, c.rule.max_behind_s, c.severity)
        for t in tables
        for c in t.all_checks
        if isinstance(c.rule, CaughtUpWithLanding)
    ]


def build_freshness_sensor(tables: Sequence[TableSpec], paths: LakehousePaths) -> dg.SensorDefinition | None:
    """The sensor, or None when no table declares ``caught_up_with_landing``."""
    watched = _watched(tables)
    if not watched:
        return None
    late = late_files(paths)  # a tick looks at only the files that may be new since the last listing

    @dg.sensor(
        name=SENSOR_NAME,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="How far behind what landed each table is: its caught_up_with_landing check, without a run.",
    )
    def _freshness(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        last: dict[str, list] = json.loads(context.cursor) if context.cursor else {}
        now = time.time()
        events, behind = [], []
        looked_before = late.looked_at
        # Each landing folder listed once per tick, whatever the tables it feeds.
        listed = late_listings(paths, [w[0] for w in watched], tables, late)
        names = [t.name for t in tables]
        for table, check, limit, severity in watched:
            outcome = caught_up(
                paths, table, limit, declared=feeding_folders(paths, table, tables), listed=listed, counted=names
            )
            seconds = outcome.metadata["behind_s"]
            if not outcome.passed:
                behind.append(f"{table} {seconds:.0f}s")
            passed_before, reported_at = last.get(table, [None, 0.0])
            if passed_before == outcome.passed and (outcome.passed or now - reported_at < REPEAT_FAILING_S):
                continue
            last[table] = [outcome.passed, now]
            events.append(
                dg.AssetCheckEvaluation(
                    asset_key=dg.AssetKey(table),
                    check_name=check,
                    passed=outcome.passed,
                    metadata={"evaluated_by": "the freshness sensor", **outcome.metadata},
                    severity=dg.AssetCheckSeverity.ERROR if severity == "ERROR" else dg.AssetCheckSeverity.WARN,
                )
            )
        summary = f"behind: {', '.join(behind)}" if behind else f"all {len(watched)} watched tables caught up"
        took = (
            f"tick {1000 * (time.time() - now):.0f} ms, {len(listed)} folder listing(s), "
            f"entries looked at: {late.looked_at - looked_before}"
        )
        context.log.info(f"freshness: {summary} ({took})")
        summary = f"{summary} ({took})"
        return dg.SensorResult(skip_reason=summary, asset_events=events, cursor=json.dumps(last))

    return _freshness
