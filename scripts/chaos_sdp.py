"""``make chaos-sdp``: the example Spark Declarative Pipelines project under random SIGKILLs.

    python scripts/chaos_sdp.py --rounds 4 --kills-per-round 6

Each round lands a new file of each source (EU and US orders, customer changes with deletes,
late changes and a re-delivery), then starts ``dagster asset materialize -f
examples/sdp_orders/definitions.py --select '*'`` in a child process group and SIGKILLs the group
(Python and the Spark JVM) at a random instant, ``--kills-per-round`` times, then lets one run
finish. Every table (bronze, the two-flow silver, SCD1, SCD2, the incremental and the full
materialized view) is then compared with answers computed in plain Python from the landed rows,
and the rows missing and extra are tallied.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from devstack import REPO_ROOT
from lakehouse_assets.lib.spark.session import get_spark
from verification import orders_answers as answers
from verification.crash import materialize_in_child
from verification.tally import tally

LOCATION = ("-f", str(REPO_ROOT / "examples" / "sdp_orders" / "definitions.py"))


def _say(started: float, message: str) -> None:
    print(f"[{(time.monotonic() - started) / 60:5.1f} min] {message}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--kills-per-round", type=int, default=6)
    parser.add_argument("--min-seconds", type=float, default=2, help="earliest kill after the run starts")
    parser.add_argument("--max-seconds", type=float, default=50, help="latest kill after the run starts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", help="keep the data root here (default: a new temporary folder)")
    args = parser.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="lakehouse-chaos-sdp-"))
    landing = work / "lakehouse" / "landing" / "sdp_orders"
    rng, started, spark = random.Random(args.seed), time.monotonic(), get_spark()
    _say(started, f"chaos on examples/sdp_orders in {work}: {args.rounds} rounds, {args.kills_per_round} kills each")
    eu: list[dict] = []
    us: list[dict] = []
    changes: list[dict] = []
    kills = attempts = 0
    totals: Counter = Counter()
    for round_no in range(1, args.rounds + 1):
        new = answers.land_round(landing, round_no)
        eu, us, changes = eu + new[0], us + new[1], changes + new[2]
        for _ in range(args.kills_per_round):
            attempts += 1
            delay = rng.uniform(args.min_seconds, args.max_seconds)
            kills += materialize_in_child(work, "*", kill_after=delay, location=LOCATION).killed
        final = materialize_in_child(work, "*", location=LOCATION)
        if final.returncode != 0:
            raise SystemExit(f"round {round_no}: the run after the kills failed:\n{final.output}")
        spark.catalog.clearCache()
        result = tally(spark, work / "lakehouse" / "tables", answers.expected_rows(eu, us, changes))
        for name, (missing, extra) in result.items():
            totals[(name, "missing")] += missing
            totals[(name, "extra")] += extra
        bad = {name: counts for name, counts in result.items() if any(counts)}
        _say(started, f"round {round_no}: {kills} kills in {attempts} attempts; "
             + (f"MISMATCH {bad}" if bad else f"all {len(result)} tables exact"))  # fmt: skip
    print(f"\n{kills} kills in {attempts} attempts over {args.rounds} rounds; rows missing / extra after each round:")
    for name in answers.COMPARED_COLUMNS:
        print(f"  {name:26} missing {totals[(name, 'missing')]:>4}   extra {totals[(name, 'extra')]:>4}")
    bad_rows = sum(totals.values())
    print("PASS: every table exact after every round" if bad_rows == 0 else f"FAIL: {bad_rows} rows missing or extra")
    raise SystemExit(1 if bad_rows else 0)


if __name__ == "__main__":
    main()
