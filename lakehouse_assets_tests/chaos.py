"""``make chaos``: many SIGKILLs at random instants across landing rounds, then a tally.

    python -m lakehouse_assets_tests.chaos --kills 200 --kills-per-round 10

Each round lands a new generated batch, starts ``dagster asset materialize`` of the events
tables in a child process group and SIGKILLs the group (Python and the Spark JVM) at a random
instant, ``--kills-per-round`` times, then lets one run finish and counts, against the answer
computed in plain Python from the landed files, the rows lost and duplicated in every table.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.settings import LakehousePaths
from lakehouse_assets.lib.spark import get_spark
from lakehouse_assets_tests.crash import materialize_in_child
from lakehouse_assets_tests.expected import ExpectedEvents

CHAIN = "bronze_events,bronze_events_quarantine,silver_events,silver_events_quarantine,gold_hourly_revenue"


def tally(root: Path, spark) -> dict[str, tuple[int, int]]:
    """(lost, duplicated) rows per table against the plain-Python answer."""
    expected = ExpectedEvents(root)
    read = lambda t: spark.read.format("delta").load(str(root / "tables" / t))  # noqa: E731
    result: dict[str, tuple[int, int]] = {}
    stored = Counter(Path(r[0]).name for r in read("bronze_events").select("_source_file").collect())
    stored += Counter(Path(r[0]).name for r in read("bronze_events_quarantine").select("_source_file").collect())
    lost = sum(max(0, n - stored[f]) for f, n in expected.lines_per_file.items())
    dup = sum(max(0, stored[f] - n) for f, n in expected.lines_per_file.items())
    result["bronze_events + quarantine"] = (lost, dup)
    silver = Counter(r[0] for r in read("silver_events").select("event_id").collect())
    result["silver_events"] = (len(set(expected.silver) - set(silver)), sum(n - 1 for n in silver.values() if n > 1))
    quarantined = len(read("silver_events_quarantine").collect())
    want = len(expected.quarantined)
    result["silver_events_quarantine"] = (max(0, want - quarantined), max(0, quarantined - want))
    gold = Counter((r[0], r[1], r[2]) for r in read("gold_hourly_revenue").select("window_start", "category", "orders").collect())
    answer = Counter((k[0], k[1], v[1]) for k, v in expected.hourly_revenue().items())
    result["gold_hourly_revenue"] = (sum((answer - gold).values()), sum((gold - answer).values()))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--kills-per-round", type=int, default=10)
    parser.add_argument("--min-seconds", type=float, default=3)
    parser.add_argument("--max-seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="lakehouse-chaos-"))
    paths = LakehousePaths(str(work / "lakehouse"))
    spark = get_spark()
    kills = attempts = rounds = 0
    totals: Counter = Counter()
    while kills < args.kills:
        rounds += 1
        start = datetime(2026, 11, 20, rounds % 24, tzinfo=UTC)
        generate(paths, GeneratorOptions(files=2, rows=200, seed=rounds, start=start, duplicate=0.1, late=0.2), ["events"])
        for _ in range(args.kills_per_round):
            attempts += 1
            outcome = materialize_in_child(work, CHAIN, kill_after=rng.uniform(args.min_seconds, args.max_seconds))
            kills += outcome.killed
        final = materialize_in_child(work, CHAIN)
        if final.returncode != 0:
            raise SystemExit(f"round {rounds}: the run after the kills failed:\n{final.output}")
        spark.catalog.clearCache()
        for table, (lost, dup) in tally(work / "lakehouse", spark).items():
            totals[(table, "lost")] += lost
            totals[(table, "duplicated")] += dup
        print(f"round {rounds}: {kills} kills so far ({attempts} attempts)", flush=True)
    print(f"\n{kills} kills in {attempts} attempts over {rounds} rounds; rows lost / duplicated after each round:")
    for table in sorted({t for t, _ in totals}):
        print(f"  {table:32} lost {totals[(table, 'lost')]:>5}   duplicated {totals[(table, 'duplicated')]:>5}")
    bad = sum(totals.values())
    print("PASS: zero lost, zero duplicated" if bad == 0 else f"FAIL: {bad} rows lost or duplicated")
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
