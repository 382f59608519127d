"""``unique`` answers what a whole-table check answers, whichever way it gets there.

A small Delta table written as a ``merge(keys=["id"])`` table's micro-batches are (the engine's
own idempotent MERGE, each with its transaction id). Each step changes the table, evaluates the
check from the last outcome, and compares with the keys the test counts itself. The steps walk
every path: a first whole-table check, the keys inserted since (the writer's MERGE keeps the
rest unique), carried over, the periodic whole-table check, a duplicate appended by hand, a
duplicate written with a transaction id (the keys-only answer fails, the whole table confirms),
another table at the same path, and a table whose writer proves nothing.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from lakehouse_assets.lib.declare.checks import CheckOutcome, UniqueKeys
from lakehouse_assets.lib.declare.sinks import MergeSink
from lakehouse_assets.lib.engine.checks import unique_keys
from lakehouse_assets.lib.engine.checks.check_context import CheckContext
from lakehouse_assets.lib.engine.writing.writes import BatchWrite, merge_batch
from lakehouse_assets.lib.paths import LakehousePaths

RULE = UniqueKeys(("id",))
SINK = MergeSink(keys=["id"], when_matched="update")
SCHEMA = "id STRING, amount DOUBLE"
WHOLE = "every key of the whole table"


class Table:
    def __init__(self, spark, root: Path) -> None:
        self.spark, self.paths = spark, LakehousePaths(str(root))
        self.path = self.paths.table("orders")
        self.batch = 0
        self.create()

    def create(self) -> None:
        self.spark.sql(
            f"CREATE OR REPLACE TABLE delta.`{self.path}` ({SCHEMA}) USING delta "
            "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
        )

    def merge(self, rows: list[tuple[str, float]]) -> None:
        """One micro-batch through the engine's MERGE (duplicates in the batch collapse to one row)."""
        self.batch += 1
        write = BatchWrite(self.spark, self.path, "orders-query", self.batch)
        merge_batch(SINK, self.spark.createDataFrame(rows, SCHEMA), write)

    def append(self, rows: list[tuple[str, float]], txn: bool) -> None:
        writer = self.spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append")
        if txn:  # as a micro-batch write would: the table's writer is trusted with it
            self.batch += 1
            writer = writer.option("txnAppId", "orders-query").option("txnVersion", self.batch)
        writer.save(self.path)

    def duplicates(self) -> int:
        counts = Counter(r["id"] for r in self.spark.read.format("delta").load(self.path).collect())
        return sum(1 for n in counts.values() if n > 1)

    def evaluate(self, last: CheckOutcome | None, writer_keys=("id",)) -> CheckOutcome:
        previous = {RULE.check_name: last} if last else {}
        ctx = CheckContext(self.spark, self.paths, "orders", None, {}, None, previous, writer_keys=writer_keys)
        outcome = unique_keys.evaluate(RULE, ctx)
        assert outcome.metadata["duplicate_keys"] == self.duplicates(), outcome.metadata
        assert outcome.passed == (self.duplicates() == 0)
        return outcome


def test_every_way_of_evaluating_gives_the_whole_table_answer(spark, tmp_path: Path) -> None:
    t = Table(spark, tmp_path)
    t.merge([("a", 1.0), ("b", 2.0), ("c", 3.0)])
    first = t.evaluate(None)
    assert first.passed and first.metadata["evaluated"] == WHOLE
    assert first.metadata["evaluations_since_full_scan"] == 0

    # Updates of stored keys, new keys, a key twice in one batch: the MERGE keeps one row each.
    t.merge([("a", 5.0), ("d", 4.0), ("e", 1.0), ("e", 9.0)])
    followed = t.evaluate(first)
    assert followed.passed and followed.metadata["evaluated"].startswith(
        f"the keys inserted since version {first.metadata['delta_version']}"
    )
    assert followed.metadata["evaluations_since_full_scan"] == 1
    assert followed.metadata["delta_version"] == first.metadata["delta_version"] + 1

    carried = t.evaluate(followed)
    assert carried.passed and carried.metadata["evaluated"] == "carried over (no commit since)"

    # The FULL_SCAN_EVERY-th evaluation reads the whole table again, and the count starts over.
    t.merge([("f", 1.0)])
    due = CheckOutcome(True, {**followed.metadata, "evaluations_since_full_scan": unique_keys.FULL_SCAN_EVERY - 1})
    periodic = t.evaluate(due)
    assert periodic.metadata["evaluated"] == WHOLE and periodic.metadata["evaluations_since_full_scan"] == 0

    # A duplicate appended by hand (no transaction id): the whole table answers, and finds it.
    t.append([("b", 2.0)], txn=False)
    by_hand = t.evaluate(periodic)
    assert not by_hand.passed and by_hand.metadata["evaluated"] == WHOLE
    assert by_hand.metadata["duplicate_keys"] == 1 and "b" in by_hand.metadata["examples"]

    # A failed last evaluation is never followed on from: the whole table answers until it passes.
    spark.sql(f"DELETE FROM delta.`{t.path}` WHERE id = 'b'")
    t.merge([("b", 2.0)])
    repaired = t.evaluate(by_hand)
    assert repaired.passed and repaired.metadata["evaluated"] == WHOLE

    # A key written twice with transaction ids (a writer breaking its promise): the keys it
    # inserted show the duplicate, and the whole table confirms it.
    t.append([("g", 1.0)], txn=True)
    t.append([("g", 1.0)], txn=True)
    broken = t.evaluate(repaired)
    assert not broken.passed and broken.metadata["evaluated"] == WHOLE and "g" in broken.metadata["examples"]

    # Another table at the same path (its versions start again): never followed on from.
    last_good = repaired
    shutil.rmtree(t.path)
    t.create()
    t.merge([("x", 1.0)])
    again = t.evaluate(last_good)
    assert again.passed and again.metadata["evaluated"] == WHOLE
    assert again.metadata["table_id"] != last_good.metadata["table_id"]


def test_a_table_whose_writer_proves_nothing_checks_changed_keys_against_the_table(spark, tmp_path: Path) -> None:
    t = Table(spark, tmp_path)
    t.append([("a", 1.0), ("b", 1.0)], txn=True)
    first = t.evaluate(None, writer_keys=None)
    assert first.passed and first.metadata["evaluated"] == "the changed keys against the whole table"
    assert unique_keys.proven(RULE, ("id",)) and unique_keys.proven(UniqueKeys(("day", "id")), ("id", "day"))
    assert not unique_keys.proven(UniqueKeys(("id", "day")), ("id",))  # rows sharing id could merge into one
    assert not unique_keys.proven(UniqueKeys(("id",)), ("id", "day")) and not unique_keys.proven(RULE, None)
