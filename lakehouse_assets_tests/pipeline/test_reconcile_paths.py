"""``reconciles_with`` answers what a full scan answers, whichever way it gets there.

Two small Delta tables with change data feeds: ``gold`` (revenue, orders per row) must reconcile
with the purchases of ``silver``. Each step changes the tables, evaluates the check from the
last outcome, and compares the totals with sums the test keeps of the rows it wrote. The steps
walk every path: a first full scan, a followed feed (appends, updates), carried over, the
periodic full scan, a wrong remembered total (the followed answer fails and a full scan
corrects it), versions without a change data feed, a remembered version the log no longer
reaches, and a restore (a failure confirmed by a full scan).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from delta.tables import DeltaTable

from lakehouse_assets.lib.declare.checks import CheckOutcome, ReconcilesWith
from lakehouse_assets.lib.engine.checks import reconcile
from lakehouse_assets.lib.engine.checks.check_context import CheckContext
from lakehouse_assets.lib.paths import LakehousePaths

RULE = ReconcilesWith(
    other="silver",
    this_sql={"revenue": "sum(revenue)", "orders": "sum(orders)"},
    other_sql={
        "revenue": "sum(amount) FILTER (WHERE event_type = 'purchase')",
        "orders": "count_if(event_type = 'purchase')",
    },
    tolerance=1e-9,
)


class Tables:
    """The two tables and the rows the test wrote to them (the independent answer)."""

    def __init__(self, spark, root: Path) -> None:
        self.spark, self.paths = spark, LakehousePaths(str(root))
        self.gold: list[tuple[float, int]] = []
        self.silver: list[tuple[str, float, str]] = []
        for name, columns in (
            ("gold", "revenue DOUBLE, orders BIGINT"),
            ("silver", "id STRING, amount DOUBLE, event_type STRING"),
        ):
            spark.sql(
                f"CREATE TABLE delta.`{self.paths.table(name)}` ({columns}) USING delta "
                "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
            )

    def add(self, gold: list[tuple[float, int]], silver: list[tuple[str, float, str]]) -> None:
        if gold:
            self.spark.createDataFrame(gold, "revenue DOUBLE, orders BIGINT").write.format("delta").mode("append").save(
                self.paths.table("gold")
            )
            self.gold += gold
        if silver:
            self.spark.createDataFrame(silver, "id STRING, amount DOUBLE, event_type STRING").write.format(
                "delta"
            ).mode("append").save(self.paths.table("silver"))
            self.silver += silver

    def expected(self) -> dict[str, float]:
        purchases = [amount for _, amount, kind in self.silver if kind == "purchase"]
        return {
            "revenue": sum(r for r, _ in self.gold),
            "orders": sum(o for _, o in self.gold),
            "revenue_in_silver": sum(purchases),
            "orders_in_silver": len(purchases),
        }

    def evaluate(self, last: CheckOutcome | None) -> CheckOutcome:
        previous = {RULE.check_name: last} if last else {}
        ctx = CheckContext(self.spark, self.paths, "gold", None, {}, None, previous_outcomes=previous)
        return reconcile.evaluate(RULE, ctx)


def totals(outcome: CheckOutcome) -> dict[str, float]:
    return {
        k: pytest.approx(outcome.metadata[k]) for k in ("revenue", "orders", "revenue_in_silver", "orders_in_silver")
    }


def test_every_way_of_evaluating_gives_the_full_scan_answer(spark, tmp_path: Path) -> None:
    t = Tables(spark, tmp_path)
    t.add(
        [(10.0, 1), (5.5, 2)],
        [("a", 10.0, "purchase"), ("b", 2.5, "purchase"), ("c", 3.0, "purchase"), ("d", 99.0, "view")],
    )
    first = t.evaluate(None)
    assert first.passed and first.metadata["evaluated"] == "full scan"
    assert totals(first) == t.expected()

    t.add([(4.0, 1)], [("e", 4.0, "purchase"), ("f", 7.0, "view")])
    followed = t.evaluate(first)
    assert followed.passed and followed.metadata["evaluated"] == "followed through the change data feeds"
    assert followed.metadata["evaluations_since_full_scan"] == 1
    assert (
        totals(followed)
        == t.expected()
        == {"revenue": 19.5, "orders": 4, "revenue_in_silver": 19.5, "orders_in_silver": 4}
    )

    carried = t.evaluate(followed)
    assert carried.passed and carried.metadata["evaluated"] == "carried over (neither table changed)"
    assert totals(carried) == t.expected()

    # Updates: a purchase becomes a view, and gold's row shrinks to match (pre- and post-images).
    DeltaTable.forPath(spark, t.paths.table("silver")).update("id = 'b'", {"event_type": "'view'"})
    DeltaTable.forPath(spark, t.paths.table("gold")).update("revenue = 5.5", {"revenue": "3.0", "orders": "1"})
    t.silver = [(i, a, "view" if i == "b" else k) for i, a, k in t.silver]
    t.gold = [(3.0, 1) if r == 5.5 else (r, o) for r, o in t.gold]
    updated = t.evaluate(followed)
    assert updated.passed and updated.metadata["evaluated"] == "followed through the change data feeds"
    assert updated.metadata["evaluations_since_full_scan"] == 2
    assert totals(updated) == t.expected()

    # The FULL_SCAN_EVERY-th evaluation scans both tables again, and the count starts over.
    t.add([(1.0, 1)], [("g", 1.0, "purchase")])
    not_yet = CheckOutcome(True, {**updated.metadata, "evaluations_since_full_scan": reconcile.FULL_SCAN_EVERY - 2})
    assert t.evaluate(not_yet).metadata["evaluated"] == "followed through the change data feeds"
    due = CheckOutcome(True, {**updated.metadata, "evaluations_since_full_scan": reconcile.FULL_SCAN_EVERY - 1})
    periodic = t.evaluate(due)
    assert periodic.passed and periodic.metadata["evaluated"] == "full scan"
    assert periodic.metadata["evaluations_since_full_scan"] == 0
    assert totals(periodic) == t.expected()

    # A remembered total that is wrong: the followed answer fails, and the full scan that must
    # confirm a failure finds the tables reconcile.
    t.add([(2.0, 1)], [("h", 2.0, "purchase")])
    wrong = CheckOutcome(True, {**periodic.metadata, "revenue": periodic.metadata["revenue"] + 1})
    corrected = t.evaluate(wrong)
    assert corrected.passed and corrected.metadata["evaluated"] == "full scan"
    assert totals(corrected) == t.expected()

    # Versions written without a change data feed cannot be followed: the full scans answer. Both
    # tables grow alike, so taking the missing feed for "no change" would pass with stale totals.
    for name in ("gold", "silver"):
        spark.sql(f"ALTER TABLE delta.`{t.paths.table(name)}` SET TBLPROPERTIES (delta.enableChangeDataFeed = false)")
    t.add([(6.0, 2)], [("i", 2.0, "purchase"), ("j", 4.0, "purchase")])
    unfollowed = t.evaluate(corrected)
    assert unfollowed.passed and unfollowed.metadata["evaluated"] == "full scan"
    assert totals(unfollowed) == t.expected()
    for name in ("gold", "silver"):
        spark.sql(f"ALTER TABLE delta.`{t.paths.table(name)}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")

    # A remembered version the log has not reached (the log was put back from an older copy): no
    # feed leads from there, and the full scans answer.
    ahead = CheckOutcome(True, {**unfollowed.metadata, "delta_version": unfollowed.metadata["delta_version"] + 5})
    behind = t.evaluate(ahead)
    assert behind.passed and behind.metadata["evaluated"] == "full scan"
    assert totals(behind) == t.expected()

    # gold restored to its first version: the tables no longer reconcile, and the failure is the
    # full scans' answer.
    DeltaTable.forPath(spark, t.paths.table("gold")).restoreToVersion(1)
    t.gold = [(10.0, 1), (5.5, 2)]
    restored = t.evaluate(unfollowed)
    assert not restored.passed and restored.metadata["evaluated"] == "full scan"
    assert totals(restored) == t.expected()
