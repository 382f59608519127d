"""One instrumented Dagster materialization in this (fresh) process, for the overhead split.

    python bench/dagster_run.py --select bronze_events,silver_events [--runs 1]

Runs the repository's Definitions under ``$LAKEHOUSE_ROOT`` / ``$DAGSTER_HOME`` exactly as
``dagster asset materialize`` does (in-process executor, one SparkSession), with timers wrapped
around the framework's pieces (nothing in the framework is changed): Spark session start, each
table's ``TableRunner.run`` with its queries' ``StreamingQueryProgress.durationMs``, the
materialization metadata, each asset check, and the step and run times from Dagster's event log.
``--runs N`` materializes N times in the same process (warm JVM) and reports each run.
Prints ``BENCH_JSON {...}`` at the end.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import dagster as dg  # noqa: E402

from lakehouse_assets.definitions import build_definitions  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.instrument import PROGRESS, SPARK, TIMES, instrument, step_times  # noqa: E402

IMPORTED = time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--select", required=True, help="comma-separated asset keys")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--state-du", default="", help="tables whose checkpoint state/ size to report")
    parser.add_argument("--land-rows", type=int, default=0, help="before each run, land an hour of every source")
    parser.add_argument("--land-sources", default="", help="comma-separated sources to land (default: all four)")
    parser.add_argument("--land-offset", type=int, default=0, help="hours (and seeds) after the first landed hour")
    args = parser.parse_args()
    instrument()
    defined = time.monotonic()
    defs = build_definitions()
    definitions_s = time.monotonic() - defined
    instance = dg.DagsterInstance.get()
    selection = "*" if args.select == "*" else [dg.AssetKey(k) for k in args.select.split(",")]
    runs = []
    for i in range(args.runs):
        if args.land_rows:
            from datetime import UTC, datetime, timedelta

            from lakehouse_assets.generate import GeneratorOptions, generate
            from lakehouse_assets.lib.settings import LakehousePaths

            at = args.land_offset + i
            start = datetime(2026, 1, 5, tzinfo=UTC) + timedelta(hours=at)
            options = GeneratorOptions(
                files=1, rows=args.land_rows, seed=1_000_000 + at, start=start, impressions=args.land_rows // 2
            )
            generate(LakehousePaths.from_env(), options, args.land_sources.split(",") if args.land_sources else None)
        TIMES.clear()
        PROGRESS.clear()
        SPARK.clear()
        t = time.monotonic()
        result = dg.materialize(
            assets=list(defs.assets or []),
            resources=defs.resources,
            instance=instance,
            selection=selection,
            raise_on_error=False,
        )
        wall = time.monotonic() - t
        steps, run_s = step_times(instance, result.run_id)
        metadata = {}
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            metadata[mat.asset_key.to_user_string()] = {
                k: v.value for k, v in mat.metadata.items() if isinstance(v.value, (int, float))
            }
        state = {}
        root = Path(os.environ["LAKEHOUSE_ROOT"])
        for name in filter(None, args.state_du.split(",")):
            folder = root / "checkpoints" / name / "query" / "state"
            state[name] = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.exists() else 0
        runs.append({
            "success": result.success, "wall_s": round(wall, 3), "run_s": round(run_s, 3),
            "spark_start_s": round(SPARK.get("start_s", 0.0), 3),
            "steps_s": {k: round(v, 3) for k, v in steps.items()},
            "tables": {k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in TIMES.items()},
            "progress": dict(PROGRESS), "metadata": metadata, "state_bytes": state,
        })  # fmt: skip
    out = {
        "import_s": round(IMPORTED - STARTED, 3),
        "definitions_s": round(definitions_s, 3),
        "total_s": round(time.monotonic() - STARTED, 3),
        "runs": runs,
    }
    print("BENCH_JSON " + json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main()
