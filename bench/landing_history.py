"""A lakehouse that has run for a year: ``make bench-history`` (``python -m bench.landing_history``).

For each history size (default 10, 10,000 and 100,000 earlier events files; ``--levels``), once
with every landed file kept and once with ``clean_source="archive"``: the history is landed and
ingested in batches (``--batch`` files a run, as a feed lands them over time), then a one-file
run of the events chain (bronze → silver → gold, Dagster in this process, its asset checks
included) and a landing sensor tick are timed. Then a first backfill of ``--backfill`` files:
the framework's bronze query against a plain Spark batch over the same files (both in this one
warm process and session: like for like). Writes ``bench/history_results.json`` and the
"Landing history" block of ``bench/results.md``.

Targets (issue "A lakehouse that has run for a year"): the one-file run and the tick at the
largest history ≤ 1.5× at 10 files; the backfill's rows per second ≥ 0.8× the plain batch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import BENCH, REPO, log, machine, median, write_block

RESULTS_JSON = BENCH / "history_results.json"
BLOCK_START, BLOCK_END = "<!-- landing-history -->", "<!-- /landing-history -->"
CHAIN = [
    "bronze_events",
    "bronze_events_quarantine",
    "silver_events",
    "silver_events_quarantine",
    "gold_hourly_revenue",
]
T0 = datetime(2026, 1, 5, tzinfo=UTC)


def land(folder: Path, first: int, count: int, rows: int = 1) -> None:
    """``count`` events files of ``rows`` valid events each, landed as producers do (a temporary
    name renamed into place), one event-time minute per file."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(first, first + count):
        at = (T0 + timedelta(minutes=i)).isoformat().replace("+00:00", "Z")
        lines = "".join(
            json.dumps({"event_id": f"e{i}-{j}", "event_time": at, "user_id": f"u{i % 97}", "event_type": "purchase",
                        "amount": 1.5, "category": f"c{i % 7}"}) + "\n"
            for j in range(rows)
        )  # fmt: skip
        (folder / f"_ev-{i:08d}.json").write_text(lines)
        os.rename(folder / f"_ev-{i:08d}.json", folder / f"ev-{i:08d}.json")


def tables(archive: bool) -> list:
    """The demo's tables; with ``archive``, bronze_events' landed files archived once committed."""
    from lakehouse_assets.definitions import TABLES

    if not archive:
        return TABLES
    changed = []
    for t in TABLES:
        if t.name == "bronze_events":
            lines = replace(t.inputs["lines"], clean_source="archive")
            t = replace(t, inputs={"lines": lines})
        changed.append(t)
    return changed


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


class Root:
    """One data root of the bench: its definitions, instance and landing folder."""

    def __init__(self, workdir: Path, name: str, archive: bool) -> None:
        import dagster as dg

        from lakehouse_assets.lib import LakehousePaths, build_definitions

        self.dir = workdir / name
        shutil.rmtree(self.dir, ignore_errors=True)
        self.paths = LakehousePaths(str(self.dir / "data"))
        self.tables = tables(archive)
        self.defs = build_definitions(self.tables, self.paths)
        self.instance = dg.DagsterInstance.ephemeral()
        self.folder = self.dir / "data" / "landing" / "events"
        self.landed = 0
        self.tick_cursor: str | None = None

    def materialize(self) -> float:
        import dagster as dg

        started = time.monotonic()
        result = dg.materialize(
            assets=list(self.defs.assets or []), resources=self.defs.resources, instance=self.instance,
            selection=CHAIN, raise_on_error=False,
        )  # fmt: skip
        if not result.success:
            raise RuntimeError(f"a run of {self.dir.name} failed")
        return time.monotonic() - started

    def grow(self, files: int, batch: int) -> None:
        """Land and ingest ``files`` more files, ``batch`` a run (bronze, silver and gold)."""
        from lakehouse_assets.lib.engine.run import run_table
        from lakehouse_assets.lib.spark.session import get_spark

        spark = get_spark()
        by_name = {t.name: t for t in self.tables}
        chain = [by_name[name] for name in ("bronze_events", "silver_events", "gold_hourly_revenue")]
        while files > 0:
            n = min(batch, files)
            land(self.folder, self.landed, n)
            self.landed += n
            files -= n
            for table in chain:
                run_table(spark, self.paths, table)

    def tick(self) -> float:
        """A landing sensor tick, timed (its cursor carried to the next)."""
        import dagster as dg

        from lakehouse_assets.lib.orchestrate.resources import LakehouseResource

        sensor = next(s for s in self.defs.sensors or [] if s.name == "landing_events_sensor")
        context = dg.build_sensor_context(
            instance=self.instance, cursor=self.tick_cursor,
            resources={"lakehouse": LakehouseResource(root=self.paths.root)},
        )  # fmt: skip
        started = time.monotonic()
        sensor(context)
        elapsed = time.monotonic() - started
        self.tick_cursor = context.cursor
        return elapsed


def measure(root: Root, reps: int) -> dict:
    """One-file runs and ticks at the root's current history."""
    runs, ticks_new, ticks_quiet = [], [], []
    root.tick()  # lists, finds the history read: the cursor starts here
    for _ in range(reps):
        land(root.folder, root.landed, 1, rows=20)
        root.landed += 1
        ticks_new.append(root.tick())
        runs.append(root.materialize())
        time.sleep(1.1)  # the folder's last change is then over a second before the next listing
        root.tick()
        ticks_quiet.append(root.tick())
    checkpoint = root.dir / "data" / "checkpoints" / "bronze_events" / "query"
    return {
        "files_before": root.landed - reps, "run_s": runs, "run_median_s": median(runs),
        "tick_new_ms": [t * 1000 for t in ticks_new], "tick_quiet_ms": [t * 1000 for t in ticks_quiet],
        "spark_source_log_bytes": tree_bytes(checkpoint / "sources"),
        "intake_bytes": tree_bytes(root.dir / "data" / "checkpoints" / "bronze_events" / "_intake"),
        "files_in_landing": sum(1 for _ in root.folder.iterdir()) if root.folder.exists() else 0,
    }  # fmt: skip


def backfill(workdir: Path, files: int, rows: int) -> dict:
    """A first backfill of ``files`` files: the framework's bronze query against a plain Spark
    batch doing the same parsing into the same two tables, both in this warm session."""
    import importlib.util

    from lakehouse_assets.lib.engine.run import run_table
    from lakehouse_assets.lib.spark.session import get_spark

    spec = importlib.util.spec_from_file_location("plain_pipeline", BENCH / "plain_pipeline.py")
    plain_module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(plain_module)  # type: ignore[union-attr]
    root = Root(workdir, "backfill", archive=False)
    land(root.folder, 0, files, rows)
    spark = get_spark()
    bronze = next(t for t in tables(False) if t.name == "bronze_events")
    started = time.monotonic()
    report = run_table(spark, root.paths, bronze)
    framework_s = time.monotonic() - started
    plain = plain_module.Pipeline(spark, str(root.dir / "data")).batch_bronze(str(root.dir / "plain"))
    total = files * rows
    assert report.rows_written == total, (report.rows_written, total)
    return {
        "files": files, "rows": total, "framework_s": framework_s, "plain_s": plain["duration_s"],
        "framework_rows_per_s": total / framework_s, "plain_rows_per_s": total / plain["duration_s"],
        "files_per_hour": files / framework_s * 3600,
    }  # fmt: skip


def report(results: dict) -> str:
    lines = [BLOCK_START, "## Landing history: a lakehouse that has run for a year", ""]
    lines.append(
        "Written by `make bench-history` (`bench/landing_history.py`): the history landed and ingested in batches "
        "(files a run below); each figure the median of the one-file runs of the events chain (Dagster in a warm "
        "process, asset checks included) and of sensor ticks at that size."
    )
    lines += ["", "| landed files | files before | one-file run | tick, new / quiet | Spark's file-source log | files in landing | measured |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    variants = [v for v in ("keep", "archive") if results.get(v)]
    for variant in variants:
        when = results.get(f"{variant}_when", results.get("when", ""))
        about = f"{when}, {results.get(f'{variant}_batch', results.get('batch', 0)):,} a run"
        for level in results[variant]:
            lines.append(
                f"| {'kept' if variant == 'keep' else 'archived'} | {level['files_before']:,} | {level['run_median_s']:.1f} s "
                f"| {median(level['tick_new_ms']):.0f} / {median(level['tick_quiet_ms']):.1f} ms "
                f"| {level['spark_source_log_bytes'] / 1e6:.1f} MB | {level['files_in_landing']:,} | {about} |"
            )
    lines += ["", "| target | now | |", "|---|---|---|"]
    for variant in variants:
        series, name = results[variant], "kept" if variant == "keep" else "archive"
        ratio = series[-1]["run_median_s"] / series[0]["run_median_s"]
        tick = median(series[-1]["tick_new_ms"]) / max(median(series[0]["tick_new_ms"]), 0.001)
        lines.append(f"| one-file run at {series[-1]['files_before']:,} files ≤ 1.5× at {series[0]['files_before']:,} ({name}) | "
                     f"{ratio:.2f}× | **{'met' if ratio <= 1.5 else 'missed'}** |")  # fmt: skip
        lines.append(f"| sensor tick with a new file at {series[-1]['files_before']:,} files ≤ 1.5× ({name}) | "
                     f"{tick:.2f}× | **{'met' if tick <= 1.5 else 'missed'}** |")  # fmt: skip
    if results.get("backfill"):
        b = results["backfill"]
        ratio = b["framework_rows_per_s"] / b["plain_rows_per_s"]
        lines.append(
            f"| backfill of {b['files']:,} files ({b['rows']:,} rows) ≥ 0.8× a plain Spark batch | "
            f"{b['framework_rows_per_s']:,.0f} vs {b['plain_rows_per_s']:,.0f} rows/s = {ratio:.2f}× "
            f"({b['files_per_hour']:,.0f} files per hour) | **{'met' if ratio >= 0.8 else 'missed'}** |"
        )
    lines += ["", "Why each figure is what it is: [docs/operations.md](../docs/operations.md).", BLOCK_END]
    return "\n".join(lines)


def write(results: dict) -> None:
    RESULTS_JSON.write_text(json.dumps(results, indent=1))
    write_block(report(results), BLOCK_START, BLOCK_END)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="10,10000,100000")
    parser.add_argument("--batch", type=int, default=10_000, help="files landed and ingested per history run")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--backfill", type=int, default=100_000, help="files of the first backfill (0: none)")
    parser.add_argument("--backfill-rows", type=int, default=10)
    parser.add_argument(
        "--variants",
        default="keep,archive",
        help="keep, archive or both; the others' figures are kept from the last results",
    )
    parser.add_argument("--workdir", default=os.environ.get("BENCH_WORKDIR") or str(REPO / ".cache" / "bench-history"))
    args = parser.parse_args(argv)
    # The cursor forgets the history's names a minute on; a tick neither waits for a settling
    # folder nor watches it: the figure is what listing and deciding cost.
    for name, value in (("GRACE", "60"), ("WATCH", "0"), ("SETTLE", "0"), ("SETTLE_WAIT", "0")):
        os.environ.setdefault(f"LAKEHOUSE_SENSOR_{name}_SECONDS", value)
    started = time.monotonic()
    workdir = Path(args.workdir)
    levels = sorted(int(x) for x in args.levels.split(","))
    variants = [v for v in ("keep", "archive") if v in args.variants.split(",")]
    results: dict = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}
    for variant in ("keep", "archive"):  # figures from before a per-variant date: the run's date
        if results.get(variant) and f"{variant}_when" not in results:
            results[f"{variant}_when"], results[f"{variant}_batch"] = results.get("when"), results.get("batch")
    results |= {"machine": machine(), "batch": args.batch, "reps": args.reps, "levels": levels}
    if args.backfill:
        results.pop("backfill", None)
    # A throwaway root first: the first level is then not measured in a cold JVM and process,
    # which would flatter every later level's ratio to it.
    log("warm-up: a throwaway root of 10 files, measured once and discarded")
    warm = Root(workdir, "warm-up", archive=False)
    warm.grow(10, args.batch)
    measure(warm, 1)
    for variant in variants:
        root = Root(workdir, f"history-{variant}", archive=variant == "archive")
        series = []
        for level in levels:
            log(f"history ({variant}): growing to {level:,} files, {args.batch:,} a run")
            root.grow(level - root.landed, args.batch)
            time.sleep(61)  # the history leaves the cursor's grace window
            series.append(measure(root, args.reps))
            log(
                f"history ({variant}) at {level:,}: run {series[-1]['run_median_s']:.1f}s, ticks {series[-1]['tick_new_ms']}"
            )
        results[variant] = series
        results[f"{variant}_when"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        results[f"{variant}_batch"] = args.batch
        write(results)
    results["when"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    results["minutes"] = (time.monotonic() - started) / 60
    write(results)  # the levels are kept even if the backfill is cut short
    if args.backfill:
        log(f"backfill: {args.backfill:,} files of {args.backfill_rows} rows, framework vs plain Spark batch")
        results["backfill"] = backfill(workdir, args.backfill, args.backfill_rows)
    results["when"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    results["minutes"] = (time.monotonic() - started) / 60
    write(results)
    log(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
