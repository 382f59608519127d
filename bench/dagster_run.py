"""One instrumented Dagster materialization in this (fresh) process, for the overhead split.

    python bench/dagster_run.py --select bronze_events,silver_events [--runs 1]

Runs the repository's Definitions under ``$LAKEHOUSE_ROOT`` / ``$DAGSTER_HOME`` exactly as
``dagster asset materialize`` does (in-process executor, one SparkSession), with timers wrapped
around the framework's pieces (nothing in the framework is changed): Spark session start, each
table's ``TableRunner.run`` with its queries' ``StreamingQueryProgress.durationMs``, the
materialization metadata, each asset check, and the step and run times from Dagster's event log.
``--runs N`` materializes N times in the same process (warm JVM) and reports each run;
``--history 10,100,...`` does that after each of several history sizes (section 4).
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

from datetime import UTC, datetime, timedelta  # noqa: E402

import dagster as dg  # noqa: E402

from lakehouse_assets.definitions import build_definitions  # noqa: E402
from lakehouse_assets.generate import GeneratorOptions, generate  # noqa: E402
from lakehouse_assets.lib.settings import LakehousePaths  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.instrument import PROGRESS, SPARK, TIMES, instrument, step_times  # noqa: E402

IMPORTED = time.monotonic()


HISTORY_FILES_PER_HOUR = 12
T0 = datetime(2026, 1, 5, tzinfo=UTC)


def land_history(paths: LakehousePaths, landed: int, files: int, rows: int) -> None:
    """``files`` small events files after the ``landed`` already there, twelve per hour of event
    time (one generator call per hour: 10,000 files land in seconds, not minutes)."""
    while files > 0:
        batch = min(HISTORY_FILES_PER_HOUR, files)
        at = T0 + timedelta(hours=landed // HISTORY_FILES_PER_HOUR)
        generate(paths, GeneratorOptions(files=batch, rows=rows, seed=landed, start=at), ["events"])
        landed += batch
        files -= batch


def land_hour(paths: LakehousePaths, hour: int, rows: int, sources: list[str] | None) -> None:
    """One file of each source (or of ``sources``) covering the ``hour``-th hour after T0."""
    options = GeneratorOptions(files=1, rows=rows, seed=1_000_000 + hour, start=T0 + timedelta(hours=hour),
                               impressions=rows // 2)  # fmt: skip
    generate(paths, options, sources)


def materialize(defs: dg.Definitions, instance: dg.DagsterInstance, selection, state_du: list[str]) -> dict:
    """One run in this process, with the framework's timings and the run's numeric metadata."""
    TIMES.clear()
    PROGRESS.clear()
    SPARK.clear()
    t = time.monotonic()
    result = dg.materialize(
        assets=list(defs.assets or []), resources=defs.resources, instance=instance, selection=selection,
        raise_on_error=False,
    )  # fmt: skip
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
    for name in state_du:
        folder = root / "checkpoints" / name / "query" / "state"
        state[name] = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.exists() else 0
    return {
        "success": result.success, "wall_s": round(wall, 3), "run_s": round(run_s, 3),
        "spark_start_s": round(SPARK.get("start_s", 0.0), 3),
        "steps_s": {k: round(v, 3) for k, v in steps.items()},
        "tables": {k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in TIMES.items()},
        "progress": dict(PROGRESS), "metadata": metadata, "state_bytes": state,
    }  # fmt: skip


def history_levels(args: argparse.Namespace, run, paths: LakehousePaths, sources: list[str] | None) -> dict:
    """For each history size: land small files up to it and ingest them in one run without checks
    (not measured), then ``--runs`` runs with one new file each (measured). Sizes whose estimated
    time would end after ``--deadline`` are skipped."""
    landing = Path(paths.landing("events").removeprefix("file:"))
    landed = len(list(landing.iterdir())) if landing.exists() else 0
    levels: list[dict] = []
    skipped: list[int] = []
    for size in (int(x) for x in args.history.split(",")):
        new_files = size - landed
        if levels and args.deadline:
            # The first size's ingest run is nearly all fixed cost (a cold JVM, a few files): what a
            # later ingest run takes beyond it is the per-file cost.
            fixed, last = levels[0]["ingest"]["wall_s"], levels[-1]
            per_file = max(last["ingest"]["wall_s"] - fixed, 0) / max(last["ingested_files"], 1)
            walls = [r["wall_s"] for r in last["runs"]]
            needed = fixed + per_file * new_files + sum(walls) + 0.004 * new_files
            if time.time() + needed > args.deadline:
                print(f"history: skipping {size:,} files (needs ~{needed / 60:.0f} min)", flush=True)
                skipped.append(size)
                continue
        t = time.monotonic()
        land_history(paths, landed, new_files, args.history_rows)
        landing_s = time.monotonic() - t
        landed = size
        ingest = run(args.unchecked_selection)
        runs = []
        for _ in range(args.runs):
            land_hour(paths, landed, args.land_rows, sources)  # event time after all the history
            landed += 1
            runs.append(run(args.selection))
        timed = ", ".join(f"{r['wall_s']:.1f}" for r in runs)
        print(f"history: {size:,} files: ingest {ingest['wall_s']:.0f}s, one new file {timed}s", flush=True)
        seen_log = Path(paths.checkpoint("bronze_events").removeprefix("file:")) / "query" / "sources" / "0"
        levels.append({"files_before": size, "landing_s": round(landing_s, 2), "ingested_files": new_files,
                       "ingest": ingest, "runs": runs,
                       "seen_files_log_bytes": sum(f.stat().st_size for f in seen_log.rglob("*") if f.is_file())})  # fmt: skip
    return {"levels": levels, "skipped_levels": skipped}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--select", required=True, help="comma-separated asset keys, or *")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--state-du", default="", help="tables whose checkpoint state/ size to report")
    parser.add_argument("--land-rows", type=int, default=0, help="before each run, land an hour of every source")
    parser.add_argument("--land-sources", default="", help="comma-separated sources to land (default: all four)")
    parser.add_argument("--land-offset", type=int, default=0, help="hours (and seeds) after the first landed hour")
    parser.add_argument("--history", default="", help="comma-separated history sizes (see history_levels)")
    parser.add_argument("--history-rows", type=int, default=20, help="events per history file")
    parser.add_argument("--deadline", type=float, default=0.0, help="epoch seconds: skip history sizes past it")
    parser.add_argument("--no-checks", action="store_true", help="materialize without the asset checks")
    args = parser.parse_args()
    instrument()
    defined = time.monotonic()
    defs = build_definitions()
    definitions_s = time.monotonic() - defined
    instance = dg.DagsterInstance.get()
    keys = None if args.select == "*" else [dg.AssetKey(k) for k in args.select.split(",")]
    # Ingesting history is preparation, not a measured run: its checks would only re-read it.
    args.unchecked_selection = (dg.AssetSelection.all() if keys is None else dg.AssetSelection.assets(*keys)).without_checks()
    args.selection = args.unchecked_selection if args.no_checks else "*" if keys is None else keys
    state_du = list(filter(None, args.state_du.split(",")))
    paths = LakehousePaths.from_env()
    sources = args.land_sources.split(",") if args.land_sources else None

    def run(selection) -> dict:
        return materialize(defs, instance, selection, state_du)

    out: dict = {"import_s": round(IMPORTED - STARTED, 3), "definitions_s": round(definitions_s, 3)}
    if args.history:
        out["history"] = history_levels(args, run, paths, sources)
    else:
        runs = []
        for i in range(args.runs):
            if args.land_rows:
                land_hour(paths, args.land_offset + i, args.land_rows, sources)
            runs.append(run(args.selection))
        out["runs"] = runs
    out["total_s"] = round(time.monotonic() - STARTED, 3)
    print("BENCH_JSON " + json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main()
