"""One instrumented Dagster materialization in this (fresh) process, for the overhead split.

    python bench/dagster_run.py --select bronze_events,silver_events [--runs 1]

Runs the repository's Definitions under ``$LAKEHOUSE_ROOT`` / ``$DAGSTER_HOME`` exactly as
``dagster asset materialize`` does (in-process executor, one SparkSession), with timers wrapped
around the framework's pieces (nothing in the framework is changed): Spark session start, each
table's ``run_table`` with its queries' ``StreamingQueryProgress.durationMs``, the
materialization metadata, each asset check, and the step and run times from Dagster's event log.
``--runs N`` materializes N times in the same process (warm JVM) and reports each run;
``--land-history N`` first lands N small events files (a history to ingest); ``--levels`` prepares
one data root per history size and, once told to, measures runs at each (section 4, see
``prepare_and_measure``).
Prints ``BENCH_JSON {...}`` at the end.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from datetime import UTC, datetime, timedelta  # noqa: E402
from pathlib import Path  # noqa: E402

import dagster as dg  # noqa: E402

from lakehouse_assets.definitions import build_definitions  # noqa: E402
from lakehouse_assets.generate import GeneratorOptions, generate  # noqa: E402
from lakehouse_assets.lib.accel import class_archive  # noqa: E402
from lakehouse_assets.lib.paths import LakehousePaths  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.instrument import PROGRESS, SPARK, TIMES, instrument, step_times  # noqa: E402

IMPORTED = time.monotonic()


HISTORY_FILES_PER_HOUR = 12
T0 = datetime(2026, 1, 5, tzinfo=UTC)


def land_history(paths: LakehousePaths, landed: int, files: int, rows: int, first_hour: int = 0) -> int:
    """``files`` small events files after the ``landed`` already there, twelve per hour of event
    time from ``first_hour`` on (one generator call per hour: 10,000 files land in seconds, not
    minutes). Returns the hour after the last one landed."""
    hour = first_hour
    while files > 0:
        batch = min(HISTORY_FILES_PER_HOUR, files)
        generate(
            paths, GeneratorOptions(files=batch, rows=rows, seed=landed, start=T0 + timedelta(hours=hour)), ["events"]
        )
        landed += batch
        files -= batch
        hour += 1
    return hour


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
    state = {
        name: bytes_under(Path(paths.checkpoint(name).removeprefix("file:")) / "query" / "state") for name in state_du
    }
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


@dataclass
class Root:
    """A data root with its own Dagster instance (``<dir>/data``, ``<dir>/home``), as the bench's
    ``Scenario`` lays it out, and the hour of event time its next landed file covers."""

    paths: LakehousePaths
    defs: dg.Definitions
    instance: dg.DagsterInstance
    hour: int = 0

    @classmethod
    def open(cls, directory: str) -> Root:
        paths = LakehousePaths(str(Path(directory) / "data"))
        return cls(paths, build_definitions(paths), dg.DagsterInstance.from_config(str(Path(directory) / "home")))

    def run(self, selection, state_du: list[str] = ()) -> dict:
        return materialize(self.defs, self.instance, selection, list(state_du), self.paths)


def prepare_and_measure(args: argparse.Namespace, selection) -> dict:
    """Section 4 (and section 6's runs) in one process (one JVM), in two phases.

    Preparation (unmeasured, while the bench prepares its other sections): one data root per
    history size of ``--levels`` (``--level-dirs``), each given that many small events files and
    one ingest run without checks; the first also gets one run with checks (warms the JVM and the
    checks). Then one run with checks on each of ``--warm-dirs`` (section 1's framework root: its
    history ingested here, in a warm JVM, instead of by a cold CLI run), and ``--state-runs`` runs
    of ``--state-select`` without checks on ``--state-dir``, each after an hour of every source
    landed (section 6: sizes, not times). Prints
    ``BENCH_READY {json}`` and, with ``--wait``, waits for a line on stdin: the bench measures its
    other sections on a quiet machine meanwhile.

    Measurement: ``--level-runs`` runs (checks on) with one new events file at each size, taking
    the sizes in turn."""
    prepared: dict = {}
    levels = [int(x) for x in args.levels.split(",")] if args.levels else []
    dirs = args.level_dirs.split(",") if levels else []
    elsewhere = {int(x) for x in args.ingested_elsewhere.split(",") if x}
    roots = [Root.open(d) for level, d in zip(levels, dirs, strict=True) if level not in elsewhere]
    ingests = []
    for i, (level, root) in enumerate(zip([n for n in levels if n not in elsewhere], roots, strict=True)):
        t = time.monotonic()
        root.hour = land_history(root.paths, 0, level - (1 if i == 0 else 0), args.history_rows)
        landing_s = time.monotonic() - t
        ingests.append({"level": level, "landing_s": round(landing_s, 2),
                        "ingest": root.run(selection.without_checks())})  # fmt: skip
        if i == 0:
            land_hour(root.paths, root.hour, args.land_rows, ["events"])
            root.hour += 1
            prepared["warm_up"] = root.run(selection)
    prepared["warm_dirs"] = [Root.open(d).run(selection)["success"] for d in filter(None, args.warm_dirs.split(","))]
    if args.state_dir:  # section 6: its figures are sizes, so its runs belong to the preparation
        root = Root.open(args.state_dir)
        state_selection = dg.AssetSelection.assets(*[dg.AssetKey(k) for k in args.state_select.split(",")])
        prepared["state_runs"] = []
        for i in range(args.state_runs):
            land_hour(root.paths, i, args.land_rows, None)
            prepared["state_runs"].append(root.run(state_selection.without_checks(), args.state_du.split(",")))
    prepared["ingests"] = [
        {"level": x["level"], "landing_s": x["landing_s"], "ingest_run_s": x["ingest"]["wall_s"],
         "ingest_success": x["ingest"]["success"]} for x in ingests
    ]  # fmt: skip
    print("BENCH_READY " + json.dumps(prepared, default=str), flush=True)
    if not levels:
        return {"prepared": prepared}
    if args.wait:
        sys.stdin.readline()
    # Roots another process landed and ingested (``--land-history``, twelve files per hour from
    # hour 0) join here, in the order of their sizes, with their ingest figures from the bench.
    for level in sorted(elsewhere):
        i = levels.index(level)
        root = Root.open(dirs[i])
        root.hour = math.ceil(landed_events(root.paths) / HISTORY_FILES_PER_HOUR)
        roots.insert(i, root)
        ingests.insert(i, {"level": level, "landing_s": None, "ingest": {"wall_s": None, "success": True}})
    counts = [int(x) for x in args.level_runs.split(",")] if args.level_runs else [args.runs] * len(levels)
    before = [landed_events(root.paths) for root in roots]
    runs: list[list[dict]] = [[] for _ in levels]
    # Round robin over the sizes: every measured run follows a run on another data root, so no
    # size gets the warmer caches of a repeat, and drift over the minutes spreads evenly.
    for round_ in range(max(counts)):
        for i, root in enumerate(roots):
            if round_ < counts[i]:
                land_hour(root.paths, root.hour, args.land_rows, ["events"])
                root.hour += 1
                runs[i].append(root.run(selection))
    measured = [
        {"level": level, "files_before": before[i], "landing_s": ingests[i]["landing_s"],
         "ingest_run_s": ingests[i]["ingest"]["wall_s"], "ingest_success": ingests[i]["ingest"]["success"],
         "runs": runs[i], "seen_files_log_bytes": seen_files_log_bytes(roots[i].paths)}
        for i, level in enumerate(levels)
    ]  # fmt: skip
    return {"prepared": prepared, "levels": measured}


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
    parser.add_argument("--levels", default="", help="history sizes, e.g. 10,100,1000 (see prepare_and_measure)")
    parser.add_argument("--level-dirs", default="", help="one scenario folder (data/, home/) per history size")
    parser.add_argument("--level-runs", default="", help="measured runs at each size, e.g. 3,2,2,3 (default --runs)")
    parser.add_argument("--ingested-elsewhere", default="", help="sizes whose roots another process prepared")
    parser.add_argument("--state-dir", default="", help="scenario folder of section 6's runs (preparation)")
    parser.add_argument("--state-select", default="", help="section 6's asset keys")
    parser.add_argument("--state-runs", type=int, default=0)
    parser.add_argument("--warm-dirs", default="", help="scenario folders to run once with checks (preparation)")
    parser.add_argument("--wait", action="store_true", help="after preparation, wait for a line on stdin")
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
    if args.levels or args.state_dir or args.warm_dirs:
        out |= prepare_and_measure(args, selection)
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
    if os.environ.get(class_archive.DUMP_ENV):  # this run trains the driver's class archive
        class_archive.stop_and_dump()


if __name__ == "__main__":
    main()
