"""``make chaos``: many SIGKILLs at random instants across landing rounds, then a tally.

    python -m lakehouse_assets_tests.chaos --kills 200 --kills-per-round 20

Each round lands a new generated batch of every source, starts ``dagster asset materialize``
of the whole graph in a child process group and SIGKILLs the group (Python and the Spark JVM)
at a random instant, ``--kills-per-round`` times, then lets one run finish. Every table is then
compared with its answer, and the rows lost and duplicated are tallied:

* the events chain against the answer computed in plain Python from the landed files,
* ``silver_customers`` against the SCD2 history computed in plain Python,
* every table (bronze, quarantines, MERGE, SCD2, watermark-driven gold) against a clean
  reference run: a second data root that receives the same files and runs once per round
  with no faults, which is what the contract's "Runs" section promises equality with.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.settings import LakehousePaths
from lakehouse_assets.lib.spark import get_spark
from lakehouse_assets_tests.crash import materialize_in_child
from lakehouse_assets_tests.expected import ExpectedEvents, expected_history, scd2_row
from lakehouse_assets_tests.reference import lost_and_duplicated, mirror_landing


def _read(spark: SparkSession, root: Path, table: str):
    return spark.read.format("delta").load(str(root / "tables" / table))


def independent_tally(root: Path, spark: SparkSession) -> dict[str, tuple[int, int]]:
    """(lost, duplicated) rows against the answers computed in plain Python."""
    expected = ExpectedEvents(root)
    result: dict[str, tuple[int, int]] = {}
    stored = Counter(Path(r[0]).name for r in _read(spark, root, "bronze_events").select("_source_file").collect())
    stored += Counter(
        Path(r[0]).name for r in _read(spark, root, "bronze_events_quarantine").select("_source_file").collect()
    )
    lost = sum(max(0, n - stored[f]) for f, n in expected.lines_per_file.items())
    dup = sum(max(0, stored[f] - n) for f, n in expected.lines_per_file.items())
    result["bronze_events + quarantine (plain Python)"] = (lost, dup)
    silver = Counter(r[0] for r in _read(spark, root, "silver_events").select("event_id").collect())
    result["silver_events (plain Python)"] = (
        len(set(expected.silver) - set(silver)),
        sum(n - 1 for n in silver.values() if n > 1),
    )
    gold = Counter(
        (r[0], r[1], r[2])
        for r in _read(spark, root, "gold_hourly_revenue").select("window_start", "category", "orders").collect()
    )
    answer = Counter((k[0], k[1], v[1]) for k, v in expected.hourly_revenue().items())
    result["gold_hourly_revenue (plain Python)"] = (sum((answer - gold).values()), sum((gold - answer).values()))
    history, _, _ = expected_history(root)
    want = Counter(row for rows in history.values() for row in rows)
    got = Counter(scd2_row(r) for r in _read(spark, root, "silver_customers").collect())
    result["silver_customers SCD2 (plain Python)"] = (sum((want - got).values()), sum((got - want).values()))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--kills-per-round", type=int, default=20)
    parser.add_argument("--min-seconds", type=float, default=3, help="earliest kill after the run starts")
    parser.add_argument("--max-seconds", type=float, default=60, help="latest kill after the run starts")
    parser.add_argument("--select", default="*", help="assets to materialize (default: the whole graph)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", help="keep the data roots here (default: a new temporary folder)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="lakehouse-chaos-"))
    subject, reference = work / "subject", work / "reference"
    spark = get_spark()
    kills = attempts = rounds = 0
    totals: Counter = Counter()
    started = time.monotonic()
    print(f"chaos in {work}: {args.kills} kills, {args.kills_per_round} per round, select {args.select!r}", flush=True)
    while kills < args.kills:
        rounds += 1
        start = datetime(2026, 11, 20, rounds % 24, tzinfo=UTC)
        options = GeneratorOptions(files=2, rows=200, seed=rounds, start=start, duplicate=0.1, late=0.2)
        files = generate(LakehousePaths(str(subject / "lakehouse")), options)
        mirror_landing(files, subject / "lakehouse", reference / "lakehouse")
        for _ in range(args.kills_per_round):
            attempts += 1
            outcome = materialize_in_child(
                subject, args.select, kill_after=rng.uniform(args.min_seconds, args.max_seconds)
            )
            kills += outcome.killed
        for root, what in ((subject, "the run after the kills"), (reference, "the clean reference run")):
            final = materialize_in_child(root, args.select)
            if final.returncode != 0:
                raise SystemExit(f"round {rounds}: {what} failed:\n{final.output}")
        spark.catalog.clearCache()
        tally = independent_tally(subject / "lakehouse", spark)
        tally |= {
            f"{t} (clean run)": v
            for t, v in lost_and_duplicated(spark, subject / "lakehouse", reference / "lakehouse").items()
        }
        bad = {t: v for t, v in tally.items() if any(v)}
        for table, (lost, dup) in tally.items():
            totals[(table, "lost")] += lost
            totals[(table, "duplicated")] += dup
        minutes = (time.monotonic() - started) / 60
        print(
            f"round {rounds}: {kills} kills so far ({attempts} attempts, {minutes:.0f} min)"
            + (f"; MISMATCH {bad}" if bad else "; every table exact"),
            flush=True,
        )
    print(f"\n{kills} kills in {attempts} attempts over {rounds} rounds; rows lost / duplicated after each round:")
    for table in sorted({t for t, _ in totals}):
        print(f"  {table:50} lost {totals[(table, 'lost')]:>5}   duplicated {totals[(table, 'duplicated')]:>5}")
    bad_rows = sum(totals.values())
    print("PASS: zero lost, zero duplicated" if bad_rows == 0 else f"FAIL: {bad_rows} rows lost or duplicated")
    raise SystemExit(1 if bad_rows else 0)


if __name__ == "__main__":
    main()
