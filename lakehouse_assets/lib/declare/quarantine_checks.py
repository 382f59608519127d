"""Checks on a table's quarantine table, which every table with a quarantine gets: the share of a
run's rows sent there stays under a threshold (WARN, so a degrading feed shows in the UI before
anyone reads the table), and every row there carries its reason and raw record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakehouse_assets.lib.declare.checks import CheckOutcome, TableCheck, null_counts

if TYPE_CHECKING:
    from lakehouse_assets.lib.engine.check_context import CheckContext


def quarantine_rate(max_share: float = 0.1) -> TableCheck:
    """On the quarantine table: warn when the run sent more than ``max_share`` of the rows its
    expectations checked to quarantine (a degrading feed shows before anyone reads the table)."""

    def evaluate(ctx: CheckContext) -> CheckOutcome:
        report = ctx.report
        if report is None or report.expectation_rows == 0:
            return CheckOutcome(True, {"rows_checked": 0, "threshold": max_share})
        share = report.rows_quarantined / report.expectation_rows
        return CheckOutcome(
            share <= max_share,
            {
                "quarantine_share": round(share, 4),
                "threshold": max_share,
                "rows_quarantined": report.rows_quarantined,
                "rows_checked": report.expectation_rows,
            },
        )

    description = f"At most {max_share:.0%} of a run's rows quarantined."
    return TableCheck("quarantine_rate", description, evaluate, "WARN", target="quarantine")


def quarantine_traceable(quarantine: str, columns: list[str]) -> TableCheck:
    """On the quarantine table: every row that arrived carries ``columns`` (its reason, its raw
    record, where it came from), so each can be understood and replayed."""

    def evaluate(ctx: CheckContext) -> CheckOutcome:
        if not columns:
            return CheckOutcome(True, {"columns": "none declared"})
        missing = null_counts(ctx, columns, quarantine)
        return CheckOutcome(
            not missing,
            {
                "rows_missing_a_column": sum(missing.values()),
                "null_counts": missing or "none",
                "columns": ", ".join(columns),
            },
        )

    description = f"Every quarantined row carries {', '.join(columns) or 'its columns'}."
    return TableCheck("quarantine_rows_traceable", description, evaluate, "ERROR", target="quarantine")
