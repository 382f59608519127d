"""One instrumented Dagster materialization in this (fresh) process, for the overhead split.

    python bench/dagster_run.py --select bronze_events,silver_events [--runs 1]

Runs the repository's Definitions under ``$LAKEHOUSE_ROOT`` / ``$DAGSTER_HOME`` exactly as
``dagster asset materialize`` does (in-process executor, one SparkSession), with timers wrapped
around the framework's pieces (nothing in the framework is changed): Spark session start, each
table's ``TableRunner.run`` with its queries' ``StreamingQueryProgress.durationMs``, the
materialization metadata, each asset check, and the step and run times from Dagster's event log.
``--runs N`` materializes N times in the same process (warm JVM) and reports each run;
``--land-history N`` first lands N small events files (a history to ingest); ``--roots`` runs on
several prepared data roots in turn, in this one process (section 4).
Prints ``BENCH_JSON {...}`` at the end.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import argparse  # noqa: E402
import json  # noqa: E402
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


def materialize(
    defs: dg.Definitions, instance: dg.DagsterInstance, selection, state_du: list[str], paths: LakehousePaths
) -> dict:
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
    state = {name: bytes_under(Path(paths.checkpoint(name).removeprefix("file:")) / "query" / "state") for name in state_du}
    return {
        "success": result.success, "wall_s": round(wall, 3), "run_s": round(run_s, 3),
        "spark_start_s": round(SPARK.get("start_s", 0.0), 3),
        "steps_s": {k: round(v, 3) for k, v in steps.items()},
        "tables": {k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in TIMES.items()},
        "progress": dict(PROGRESS), "metadata": metadata, "state_bytes": state,
    }  # fmt: skip


def bytes_under(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.exists() else 0


def landed_events(paths: LakehousePaths) -> int:
    landing = Path(paths.landing("events").removeprefix("file:"))
    return len(list(landing.iterdir())) if landing.exists() else 0


def seen_files_log_bytes(paths: LakehousePaths) -> int:
    """Size of bronze_events' file-source log (one line per file ever ingested)."""
    return bytes_under(Path(paths.checkpoint("bronze_events").removeprefix("file:")) / "query" / "sources" / "0")


def across_roots(args: argparse.Namespace, selection, state_du: list[str]) -> dict:
    """``--runs`` runs on each of several prepared data roots in turn, one new events file before
    each, all in this process (one warm JVM); each root keeps its own Dagster instance. A first
    run on ``--warm-up-root`` (also with one new file) warms the JVM and is not measured."""
    sources = args.land_sources.split(",") if args.land_sources else None

    def on(spec: str, runs: int) -> dict:
        root, home = spec.split("=", 1)
        paths = LakehousePaths(root)
        defs = build_definitions(paths)
        instance = dg.DagsterInstance.from_config(home)
        before = landed_events(paths)
        out = []
        for _ in range(runs):
            land_hour(paths, landed_events(paths), args.land_rows, sources)  # after all the history
            out.append(materialize(defs, instance, selection, state_du, paths))
        return {"root": root, "files_before": before, "runs": out, "seen_files_log_bytes": seen_files_log_bytes(paths)}

    warm_up = on(args.warm_up_root, 1) if args.warm_up_root else None
    return {"warm_up": warm_up, "roots": [on(spec, args.runs) for spec in args.roots.split(",")]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--select", required=True, help="comma-separated asset keys, or *")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--state-du", default="", help="tables whose checkpoint state/ size to report")
    parser.add_argument("--land-rows", type=int, default=0, help="before each run, land an hour of every source")
    parser.add_argument("--land-sources", default="", help="comma-separated sources to land (default: all four)")
    parser.add_argument("--land-offset", type=int, default=0, help="hours (and seeds) after the first landed hour")
    parser.add_argument("--land-history", type=int, default=0, help="first land this many small events files")
    parser.add_argument("--history-rows", type=int, default=20, help="events per history file")
    parser.add_argument("--roots", default="", help="ROOT=DAGSTER_HOME,...: run on each (see across_roots)")
    parser.add_argument("--warm-up-root", default="", help="ROOT=DAGSTER_HOME for one unmeasured first run")
    parser.add_argument("--no-checks", action="store_true", help="materialize without the asset checks")
    args = parser.parse_args()
    instrument()
    defined = time.monotonic()
    defs = build_definitions()
    definitions_s = time.monotonic() - defined
    instance = dg.DagsterInstance.get()
    keys = None if args.select == "*" else [dg.AssetKey(k) for k in args.select.split(",")]
    selection = dg.AssetSelection.all() if keys is None else dg.AssetSelection.assets(*keys)
    args.selection = selection.without_checks() if args.no_checks else selection
    state_du = list(filter(None, args.state_du.split(",")))
    paths = LakehousePaths.from_env()
    sources = args.land_sources.split(",") if args.land_sources else None

    out: dict = {"import_s": round(IMPORTED - STARTED, 3), "definitions_s": round(definitions_s, 3)}
    if args.roots:
        out |= across_roots(args, args.selection, state_du)
    else:
        if args.land_history:
            t = time.monotonic()
            land_history(paths, landed_events(paths), args.land_history, args.history_rows)
            out["landing_s"] = round(time.monotonic() - t, 2)
        runs = []
        for i in range(args.runs):
            if args.land_rows:
                land_hour(paths, args.land_offset + i, args.land_rows, sources)
            runs.append(materialize(defs, instance, args.selection, state_du, paths))
        out["runs"] = runs
    out["total_s"] = round(time.monotonic() - STARTED, 3)
    print("BENCH_JSON " + json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main()
