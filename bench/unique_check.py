"""The ``unique`` check on a table its own MERGE writes: the keys it inserted against the changed
keys looked up in the whole table (``python -m bench.unique_check``).

One warm embedded session. A ``merge(keys=["event_id"])`` table of ``--rows`` rows (written in
batches through the engine's own idempotent MERGE, each with its transaction id, as
``silver_events`` is), then ``--reps`` rounds: one micro-batch of ``--batch`` new events (and a
few re-delivered), then the check evaluated both ways on that same version, alternating which
goes first: the writer's proof (``writer_keys``, reads the change data feed's inserts) and
without it (the changed keys joined with the whole table, as every ``unique`` check did before).
Prints each round and the medians; both must find no duplicate.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.common import log, median


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the table before the timed rounds")
    parser.add_argument("--batch", type=int, default=200, help="new events per timed round")
    parser.add_argument("--reps", type=int, default=6)
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from lakehouse_assets.lib.declare.checks import CheckOutcome, UniqueKeys
    from lakehouse_assets.lib.declare.sinks import MergeSink
    from lakehouse_assets.lib.engine.checks import unique_keys
    from lakehouse_assets.lib.engine.checks.check_context import CheckContext
    from lakehouse_assets.lib.engine.writing.writes import BatchWrite, merge_batch
    from lakehouse_assets.lib.paths import LakehousePaths
    from lakehouse_assets.lib.spark.session import get_spark

    spark = get_spark()
    rule, sink = UniqueKeys(("event_id",)), MergeSink(keys=["event_id"])
    with tempfile.TemporaryDirectory(prefix="bench-unique-") as work:
        paths = LakehousePaths(str(Path(work) / "root"))
        path = paths.table("events")
        spark.sql(
            f"CREATE TABLE delta.`{path}` (event_id STRING, user_id STRING, amount DOUBLE) USING delta "
            "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
        )
        batch_id, written = 0, 0

        def write(first: int, count: int, redelivered: int = 0) -> None:
            nonlocal batch_id
            batch_id += 1
            ids = spark.range(first - redelivered, first + count)
            rows = ids.select(
                F.concat(F.lit("e"), F.col("id").cast("string")).alias("event_id"),
                F.concat(F.lit("u"), (F.col("id") % 997).cast("string")).alias("user_id"),
                (F.col("id") % 100 / 4).cast("double").alias("amount"),
            )
            merge_batch(sink, rows, BatchWrite(spark, path, "bench-query", batch_id))

        log(f"writing {args.rows:,} rows through the engine's MERGE")
        step = max(1, args.rows // 5)
        while written < args.rows:
            write(written, min(step, args.rows - written))
            written += min(step, args.rows - written)

        def context(version: int, writer_keys, last: CheckOutcome | None) -> CheckContext:
            previous = {rule.check_name: last} if last else {}
            return CheckContext(spark, paths, "events", None, {"events": version}, None, previous, writer_keys)

        def timed(ctx: CheckContext) -> tuple[float, CheckOutcome]:
            started = time.perf_counter()
            outcome = unique_keys.evaluate(rule, ctx)
            return time.perf_counter() - started, outcome

        version = context(0, None, None).version()
        _, last = timed(context(version, ("event_id",), None))  # the whole-table check the rounds follow on from
        assert last.passed, last.metadata
        inserted_s: list[float] = []
        joined_s: list[float] = []
        for rep in range(args.reps):
            write(written, args.batch, redelivered=10)
            written += args.batch
            proof, lookup = context(version, ("event_id",), last), context(version, None, None)
            order = [("inserted", proof), ("joined", lookup)]
            for name, ctx in order if rep % 2 == 0 else order[::-1]:
                seconds, outcome = timed(ctx)
                assert outcome.passed, outcome.metadata
                (inserted_s if name == "inserted" else joined_s).append(seconds)
                if name == "inserted":
                    assert str(outcome.metadata["evaluated"]).startswith("the keys inserted"), outcome.metadata
                    last = outcome
            version = context(version, None, None).version()
            log(
                f"round {rep + 1}: keys inserted {inserted_s[-1]:.2f} s, changed keys joined with the table {joined_s[-1]:.2f} s"
            )
    log(
        f"{args.rows:,} rows, {args.batch} new per round, medians of {args.reps}: the keys inserted "
        f"{median(inserted_s):.2f} s, the changed keys joined with the whole table {median(joined_s):.2f} s"
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
