"""The events chain on the scale-out stack next to local mode, on this machine and the same data.

    python -m bench.scale_out [--reps 3] [--files 20] [--rows 5000]     (make bench-scale-out)

Three setups, each a warm Spark Connect engine that ``dagster asset materialize`` runs attach to
(nothing is timed before a warm-up run):

* ``local``: the engine on ``local[*]``, the data root on local disk;
* ``cluster``: the engine on a standalone master and worker (2 cores, 2 GB), local disk;
* ``cluster + S3``: the same cluster, the data root in an S3Proxy bucket.

The middle setup separates what the cluster costs (executors in another JVM) from what the
object store costs. Figures: the one-file incremental run (land one events file, materialize the
events chain; the median of ``--reps``), where its time goes (each table's step), and bronze
throughput (a backlog of ``--files`` files into ``bronze_events``). Writes
``bench/scale_out_results.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

from bench.common import BENCH, BIN, REPO, load, log, machine, median, run
from devstack.cluster import StandaloneCluster
from devstack.connect_server import ConnectServer
from devstack.environment import environment
from devstack.ports import free_port
from devstack.s3server import VERSION as S3PROXY_VERSION
from devstack.s3server import S3Server
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.paths import LakehousePaths

CHAIN = "bronze_events,bronze_events_quarantine,silver_events,silver_events_quarantine,gold_hourly_revenue"
BRONZE = "bronze_events,bronze_events_quarantine"
START = datetime(2026, 11, 22, 6, tzinfo=UTC)
STEP = re.compile(r'Finished execution of step "(\w+)" in ([\d.]+)(ms|s)')
BRONZE_LINE = re.compile(r"bronze_events: (\d+) rows read = .*?([\d.]+)s$", re.M)


def materialize(work: Path, root: str, url: str, selection: str) -> tuple[float, dict[str, float], str]:
    home = work / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    env = {"LAKEHOUSE_ROOT": root, "DAGSTER_HOME": str(home), "SPARK_REMOTE": url}
    proc = run(
        [str(BIN / "dagster"), "asset", "materialize", "-m", "lakehouse_assets.definitions", "--select", selection], env
    )
    steps = {name: float(value) / (1000 if unit == "ms" else 1) for name, value, unit in STEP.findall(proc.out)}
    return proc.wall_s, steps, proc.out


def measure(name: str, work: Path, root: str, url: str, reps: int, files: int, rows: int) -> dict:
    paths = LakehousePaths(root)
    generate(paths, GeneratorOptions(files=2, rows=500, seed=1, start=START), ["events"])
    materialize(work, root, url, CHAIN)  # warm-up: tables created, engine and executors warm
    walls, steps = [], []
    for rep in range(reps):
        generate(paths, GeneratorOptions(files=1, rows=500, seed=10 + rep, start=START), ["events"])
        wall, step, _ = materialize(work, root, url, CHAIN)
        walls.append(wall)
        steps.append(step)
        log(f"{name}: one-file run {rep + 1}/{reps}: {wall:.1f}s")
    generate(paths, GeneratorOptions(files=files, rows=rows, seed=99, start=START), ["events"])
    wall, _, out = materialize(work, root, url, BRONZE)
    found = BRONZE_LINE.findall(out)
    read, seconds = (int(found[-1][0]), float(found[-1][1])) if found else (0, 0.0)
    log(f"{name}: bronze backlog: {read} rows in {seconds:.1f}s (run {wall:.1f}s)")
    tables = sorted({t for s in steps for t in s})
    return {
        "one_file_run_s": round(median(walls), 1),
        "one_file_runs_s": [round(w, 1) for w in walls],
        "steps_s": {t: round(median([s.get(t, 0.0) for s in steps]), 2) for t in tables},
        "bronze_rows": read,
        "bronze_query_s": seconds,
        "bronze_rows_per_s": round(read / seconds) if seconds else None,
        "bronze_run_s": round(wall, 1),
    }


def report(results: dict) -> str:
    setups = list(results["setups"])
    lines = [
        "# The scale-out stack next to local mode",
        "",
        f"`make bench-scale-out` (`bench/scale_out.py`) on {results['machine']['cores']} cores "
        f"({results['machine']['cpu']}), load before: {results['load']}. Same generator data in every setup; "
        f"every run is `dagster asset materialize` as a client of a warm engine. S3Proxy {S3PROXY_VERSION}.",
        "",
        "| | " + " | ".join(setups) + " |",
        "| --- |" + " --- |" * len(setups),
        "| one new events file → gold, events chain (median) | "
        + " | ".join(f"{results['setups'][s]['one_file_run_s']} s" for s in setups)
        + " |",
        f"| bronze backlog: {results['files']} files × {results['rows']} rows, rows/s of the query | "
        + " | ".join(f"{results['setups'][s]['bronze_rows_per_s'] or 0:,}" for s in setups)
        + " |",
        "| bronze backlog: the query's seconds / the run's | "
        + " | ".join(
            f"{results['setups'][s]['bronze_query_s']} / {results['setups'][s]['bronze_run_s']}" for s in setups
        )
        + " |",
        "",
        "Where the one-file run's time goes (median seconds per step):",
        "",
        "| step | " + " | ".join(setups) + " |",
        "| --- |" + " --- |" * len(setups),
    ]
    tables = sorted({t for s in setups for t in results["setups"][s]["steps_s"]})
    for table in tables:
        lines.append(
            f"| {table} | " + " | ".join(str(results["setups"][s]["steps_s"].get(table, "")) for s in setups) + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--rows", type=int, default=5000)
    args = parser.parse_args(argv)
    work = REPO / ".cache" / "bench-scale-out"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    results: dict = {"machine": machine(), "load": load(), "files": args.files, "rows": args.rows, "setups": {}}
    with ExitStack() as stack:
        log("local: starting an engine on local[*]")
        logs = stack.enter_context(open(work / "engines.log", "ab"))
        engine = stack.enter_context(ConnectServer(free_port(), master="local[*]", log=logs))
        results["setups"]["local"] = measure("local", work / "local", str(work / "local" / "lakehouse"), engine.url,
                                             args.reps, args.files, args.rows)  # fmt: skip
        engine.stop()
        cluster = stack.enter_context(StandaloneCluster(cores=2, memory="2g"))
        s3 = stack.enter_context(S3Server(data=work / "s3"))
        with environment(s3.env()):
            log(f"cluster: starting an engine on {cluster.url}")
            engine = stack.enter_context(ConnectServer(free_port(), master=cluster.url, log=logs))
            results["setups"]["cluster"] = measure("cluster", work / "cluster", str(work / "cluster" / "lakehouse"),
                                                   engine.url, args.reps, args.files, args.rows)  # fmt: skip
            results["setups"]["cluster + S3"] = measure("cluster + S3", work / "cluster-s3", s3.root("bench"),
                                                        engine.url, args.reps, args.files, args.rows)  # fmt: skip
    (BENCH / "scale_out_results.json").write_text(json.dumps(results, indent=1))
    (BENCH / "scale_out_results.md").write_text(report(results))
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
