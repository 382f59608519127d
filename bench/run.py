"""The benchmark suite: ``make bench`` (or ``python -m bench.run [--quick]``).

Runs every measurement on freshly generated data under ``$BENCH_WORKDIR`` (default
``.cache/bench``), each in fresh processes, and writes ``bench/results.md``,
``bench/results.json`` and ``bench/history_scaling.png``. Every figure is the median over
``--reps`` runs. ``--quick`` (or ``BENCH_QUICK=1``) is a small configuration for trying the
harness; the committed results say which configuration produced them.

Sections (issue 7): 1 incremental run cost vs a plain PySpark script, 2 per-table overhead,
3 bronze throughput vs plain Spark batch and DuckDB, 4 history scaling, 5 landing-to-gold
latency under ``dagster dev``, 6 peak memory and state store size.

Everything that measures no time runs first, side by side (``--parallel``, four at a time):
section 4's process preparing one data root per history size (it also ingests section 1's
history into the framework's root and runs section 6's runs, whose figures are sizes, then
waits), the run ingesting the largest history (it also trains the driver's class archive when setup has not
built it yet), the plain script's warm-up run, section 3's batch and section 5's ``dagster dev``
with its first file. Then the timed sections run one at a
time: 5, 1 with 2, 4 (the waiting process, told to go), 3.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from bench.common import BENCH, BUDGET, FULL, QUICK, REPO, Config, chart, load, log, machine, write_results
from bench.sections.engine import bench_engine
from bench.sections.history import History
from bench.sections.incremental import bench_incremental, incremental_scenarios
from bench.sections.latency import bench_latency
from bench.sections.preparation import prepare
from bench.sections.throughput import bench_throughput


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK") == "1")
    parser.add_argument("--only", default="1,3,4,5,6,7", help="sections to run (2 runs with 1)")
    parser.add_argument("--workdir", default=os.environ.get("BENCH_WORKDIR") or str(REPO / ".cache" / "bench"))
    parser.add_argument("--out", default=str(BENCH))
    for name in (
        "reps",
        "overhead_reps",
        "big_files",
        "big_rows",
        "drops",
        "bursts",
        "state_runs",
        "throughput_reps",
        "scaling_reps",
    ):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int)
    parser.add_argument("--levels", help="comma-separated history sizes, e.g. 10,100,1000")
    parser.add_argument(
        "--budget-min",
        type=float,
        default=float(os.environ.get("BENCH_BUDGET_MIN", 20)),
        help="add repetitions beyond each section's minimum only until this many minutes (default 20)",
    )
    parser.add_argument(
        "--parallel",
        type=int,
        default=4,
        help="preparation processes at a time, the history process included (default 4)",
    )
    parser.add_argument("--prepare-only", action="store_true", help="stop after the preparation (a trial of it)")
    parser.add_argument(
        "--report", action="store_true", help="only write results.md and the docs' table again from results.json"
    )
    args = parser.parse_args(argv)
    if args.report:
        from bench.report import quote_in_docs, write_report

        out = Path(args.out)
        results = json.loads((out / "results.json").read_text())
        write_report(results, out / "results.md")
        if out.resolve() == BENCH:
            quote_in_docs(results, REPO / "docs" / "performance.md")
        return 0
    cfg = Config(**asdict(QUICK if args.quick else FULL))
    for name in (
        "reps",
        "overhead_reps",
        "big_files",
        "big_rows",
        "drops",
        "bursts",
        "state_runs",
        "throughput_reps",
        "scaling_reps",
    ):
        if getattr(args, name) is not None:
            setattr(cfg, name, getattr(args, name))
            cfg.name += f" {name}={getattr(args, name)}"
    if args.levels:
        cfg.levels = [int(x) for x in args.levels.split(",")]
        cfg.name += f" levels={args.levels}"
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sections = set(args.only.split(","))
    started = time.monotonic()
    results: dict = {
        "config": asdict(cfg), "machine": machine(), "started": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "load_start": load(),
    }  # fmt: skip
    log(f"bench ({cfg.name}) on {results['machine']['cores']} cores, load {results['load_start']}")
    BUDGET.start(args.budget_min)

    saving = threading.Lock()

    def record(name: str, fn) -> None:
        t = time.monotonic()
        try:
            results[name] = fn()
        except Exception as error:  # noqa: BLE001 - one broken section must not lose the others
            log(f"{name} failed: {error}")
            results[name] = {"error": str(error)[-3000:]}
        with saving:
            results.setdefault("section_s", {})[name] = round(time.monotonic() - t, 1)
            write_results(results, out)

    # Preparation measures nothing, so it runs side by side (see the module's docstring); the
    # longest chains first.
    log("preparing: state runs, history roots, warm-ups, the throughput batch and the latency server, side by side")
    pair = incremental_scenarios(cfg, workdir) if "1" in sections else None
    history = (History(cfg, workdir, [pair[0]] if pair else [], "6" in sections, "4" in sections)
               if {"4", "6"} & sections else None)  # fmt: skip
    try:
        dev, warm_ups, batch, prepared = prepare(cfg, workdir, sections, args.parallel, pair, history, results)
        if args.prepare_only:
            if dev and not dev.exception():
                dev.result()[0].stop()
            return 0
        if history and history.state_dir:
            record("state", history.state_result)
        # Measured sections, one at a time on a quiet machine; latency first, while its server is up.
        if dev:
            if dev.exception():
                results["latency"] = {"error": str(dev.exception())[-3000:]}
            else:
                record("latency", lambda: bench_latency(cfg, *dev.result()))
        failed = next((w.exception() for w in warm_ups if w.exception()), None)
        if history and pair and not history.warmed():
            failed = failed or RuntimeError("the history process did not ingest section 1's framework root")
        if pair and not failed:
            record("incremental", lambda: bench_incremental(cfg, *pair))
        elif pair:
            results["incremental"] = {"error": f"warm-up failed: {failed}"}
        if history and history.levels:

            def scaling() -> dict:
                if prepared is not None:
                    raise prepared
                return history.measure()

            record("scaling", scaling)
        if batch:
            record("throughput", lambda: bench_throughput(cfg, workdir, batch.result()))
        if "7" in sections:
            record("engine", lambda: bench_engine(cfg, workdir))
    finally:
        if history:
            history.close()
    results["load_end"] = load()
    results["total_min"] = round((time.monotonic() - started) / 60, 1)
    write_results(results, out)
    from bench.report import quote_in_docs, write_report

    if "scaling" in results and "error" not in results["scaling"]:
        chart(results["scaling"], out / "history_scaling.png")
    write_report(results, out / "results.md")
    if out.resolve() == BENCH and quote_in_docs(results, REPO / "docs" / "performance.md"):
        log("docs/performance.md: performance table updated")
    log(f"done in {results['total_min']} min: {out / 'results.md'}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
