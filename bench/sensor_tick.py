"""A landing sensor's tick against the size of its folder: ``make bench-tick``
(``python -m bench.sensor_tick``). Spark-free: no session, no JVM.

For each folder size (default 10, 10,000, 100,000 and 1,000,000 tiny files named as a producer
that embeds a sequence names them, ``ev-000000001.jsonl``; ``--levels``), the events sensor is
built by the framework (``build_landing_sensor``) and evaluated with Dagster's
``build_sensor_context`` against a real ephemeral instance, its cursor carried from tick to tick:
a first tick (it lists and stats every file), then ``--reps`` ticks each with one new file landed
just before (``_name`` renamed into place, as producers do), timed and reported as the median.
For reference, at each size: a bare ``os.scandir`` of the folder (every directory entry, no
stat), a listing that stats every file (the tick before issue #54), and a tick whose new file's
name sorts before the others' (a producer whose names do not sort by time: the tick stats all).
Writes ``bench/sensor_tick_results.json`` and the "sensor-tick" block of ``bench/results.md``.

Then the freshness sensor in the same folder, every gold table holding its files up to then:
its first tick (it stats every file), then ``--reps`` ticks each after one new file.

Target (issue #54 item 3): a tick with a new file at 1,000,000 files ≤ 1.5× one at 10.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.common import BENCH, log, median, write_block

RESULTS_JSON = BENCH / "sensor_tick_results.json"
BLOCK_START, BLOCK_END = "<!-- sensor-tick -->", "<!-- /sensor-tick -->"
GRACE_S = 2.0


def make_files(folder: Path, count: int) -> None:
    """``count`` tiny files (created directly: their arrival plays no part in what is timed)."""
    folder.mkdir(parents=True, exist_ok=True)
    flags = os.O_CREAT | os.O_WRONLY
    for i in range(count):
        os.close(os.open(folder / f"ev-{i:09d}.jsonl", flags, 0o644))


def land(folder: Path, name: str) -> None:
    (folder / f"_{name}").write_text('{"event_id": "x"}\n')
    os.rename(folder / f"_{name}", folder / name)


def timed(fn) -> float:
    began = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - began)


def level(workdir: Path, count: int, reps: int) -> dict:
    import dagster as dg

    from lakehouse_assets.definitions import TABLES, build_definitions
    from lakehouse_assets.lib.orchestrate.jobs import landing_sources
    from lakehouse_assets.lib.orchestrate.landing import scan
    from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
    from lakehouse_assets.lib.orchestrate.sensors import SensorSettings, build_landing_sensor

    root = workdir / f"root-{count}"
    folder = root / "landing" / "events"
    began = time.perf_counter()
    make_files(folder, count)
    log(f"{count:,} files made in {time.perf_counter() - began:.1f} s")
    job = next(j for j in build_definitions().jobs or [] if j.name == "ingest_events")
    readers = landing_sources(TABLES)["events"]
    # The history is older than the cursor's grace window, as a year's is (10 minutes by default):
    # a window of GRACE_S, waited out after the files are made.
    sensor = build_landing_sensor("events", readers, job, SensorSettings(settle_s=0, watch_s=0, grace_s=GRACE_S))
    time.sleep(GRACE_S + 0.5)
    instance = dg.DagsterInstance.ephemeral()
    resources = {"lakehouse": LakehouseResource(root=str(root))}
    cursor: list[str | None] = [None]
    kinds: list[str] = []

    def tick() -> None:
        context = dg.build_sensor_context(instance=instance, cursor=cursor[0], resources=resources)
        kinds.append(type(sensor(context)).__name__)
        cursor[0] = context.cursor

    first = timed(tick)
    new_ms = []
    for i in range(reps):
        land(folder, f"ev-{count + 1 + i:09d}.jsonl")
        new_ms.append(timed(tick))
    assert kinds[1:] == ["RunRequest"] * reps, kinds
    out_of_order = []
    slow = 1 if count >= 1_000_000 else 3  # each of these stats every file: seconds at a million
    for i in range(slow):
        land(folder, f"a-late-{i}.jsonl")  # sorts before every ev-* name
        out_of_order.append(timed(tick))
    assert kinds[-1] == "RunRequest", kinds
    fresh_first, fresh_new = freshness_ticks(root, folder, count, reps)
    scandir_ms = [timed(lambda: sum(1 for _ in os.scandir(folder))) for _ in range(3)]
    stat_all_ms = [timed(lambda: scan(folder, ["*.jsonl"])) for _ in range(slow)]
    began = time.perf_counter()
    shutil.rmtree(root)
    log(f"{count:,}: tick {median(new_ms):.1f} ms (first {first:.0f} ms); scandir {median(scandir_ms):.1f} ms, "
        f"stat all {median(stat_all_ms):.0f} ms; removed in {time.perf_counter() - began:.1f} s")  # fmt: skip
    return {"files": count, "first_tick_ms": first, "tick_new_ms": new_ms, "tick_out_of_order_ms": out_of_order,
            "scandir_ms": scandir_ms, "stat_all_ms": stat_all_ms,
            "freshness_first_tick_ms": fresh_first, "freshness_tick_new_ms": fresh_new}  # fmt: skip


def freshness_ticks(root: Path, folder: Path, count: int, reps: int) -> tuple[float, list[float]]:
    """The freshness sensor's first tick, then ``reps`` ticks each after one new file, with every
    gold table holding the folder's files up to now (as after a run)."""
    import dagster as dg

    from lakehouse_assets.definitions import TABLES
    from lakehouse_assets.lib.declare.check_kinds import CaughtUpWithLanding
    from lakehouse_assets.lib.engine.freshness import feeding_folders, held_path
    from lakehouse_assets.lib.engine.state import storage
    from lakehouse_assets.lib.orchestrate.freshness_sensor import build_freshness_sensor
    from lakehouse_assets.lib.paths import LakehousePaths

    paths = LakehousePaths(str(root))
    sensor = build_freshness_sensor(TABLES, paths)
    assert sensor is not None
    held_ns = time.time_ns()
    for table in {t.name for t in TABLES if any(isinstance(c.rule, CaughtUpWithLanding) for c in t.all_checks)}:
        marks = feeding_folders(paths, table, TABLES)
        data = {f: {"held_ns": held_ns, "globs": list(m.globs)} for f, m in marks.items()}
        storage.write_text(held_path(paths, table), json.dumps(data))
    instance = dg.DagsterInstance.ephemeral()
    cursor: list[str | None] = [None]
    messages: list[str] = []

    def tick() -> None:
        context = dg.build_sensor_context(instance=instance, cursor=cursor[0])
        result = sensor(context)
        messages.append(result.skip_reason.skip_message or "")  # type: ignore[union-attr]
        cursor[0] = result.cursor  # type: ignore[union-attr]

    first = timed(tick)
    new_ms = []
    for i in range(reps):
        land(folder, f"ev-f{count + 1 + i:09d}.jsonl")
        new_ms.append(timed(tick))
    log(f"   freshness sensor: first tick {first:.0f} ms, with a new file {median(new_ms):.1f} ms ({messages[-1]})")
    return first, new_ms


def report(results: dict) -> str:
    levels = results["levels"]
    base = median(levels[0]["tick_new_ms"])
    lines = [BLOCK_START, "## Sensor tick against the landing folder's size", ""]
    lines.append(
        f"Written by `make bench-tick` (`bench/sensor_tick.py`, Spark-free) on {results['when']}, {results['cores']} cores; "
        f"the events sensor built by the framework, evaluated with `build_sensor_context` against an ephemeral "
        f"instance; each tick figure the median of {results['reps']} ticks, each with one new file landed just before "
        "(names that sort by time); files tiny, on local disk, older than the cursor's grace window "
        f"({GRACE_S:g} s here, 10 min by default), as a year's history is."
    )
    lines += ["", "| files in the folder | tick with a new file | ratio to 10 | first tick (stats all) | "
              "bare `os.scandir` | listing that stats all (before) | tick, new name sorting first |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for x in levels:
        tick = median(x["tick_new_ms"])
        lines.append(
            f"| {x['files']:,} | {tick:.1f} ms | {tick / base:.2f}× | {x['first_tick_ms']:.0f} ms "
            f"| {median(x['scandir_ms']):.1f} ms | {median(x['stat_all_ms']):.0f} ms | {median(x['tick_out_of_order_ms']):.0f} ms |"
        )
    last = levels[-1]
    ratio = median(last["tick_new_ms"]) / base
    lines += ["", "| target | now | |", "|---|---|---|",
              f"| tick with a new file at {last['files']:,} files ≤ 1.5× at {levels[0]['files']:,} | {ratio:.2f}× "
              f"| **{'met' if ratio <= 1.5 else 'missed'}** |"]  # fmt: skip
    if all("freshness_tick_new_ms" in x for x in levels):
        fresh_base = median(levels[0]["freshness_tick_new_ms"])
        lines += ["", "The freshness sensor (`lakehouse_freshness`, every gold table caught up to the folder before "
                  "the new files), in the same folders. Until 2026-12-07 each of its ticks stat'ed every file, "
                  "as its first tick still does:", "",
                  "| files in the folder | tick with a new file | ratio to 10 | first tick (stats all) |", "|---|---|---|---|"]  # fmt: skip
        for x in levels:
            tick = median(x["freshness_tick_new_ms"])
            lines.append(
                f"| {x['files']:,} | {tick:.1f} ms | {tick / fresh_base:.2f}× | {x['freshness_first_tick_ms']:.0f} ms |"
            )
    lines += ["", "Why: [docs/operations.md](../docs/operations.md#what-a-sensor-tick-costs).", BLOCK_END]
    return "\n".join(lines)


def write(results: dict) -> None:
    RESULTS_JSON.write_text(json.dumps(results, indent=1))
    write_block(report(results), BLOCK_START, BLOCK_END)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="10,10000,100000,1000000")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--workdir", default=None, help="where the folders are made (default: a temporary folder)")
    parser.add_argument("--no-write", action="store_true", help="print, do not write bench/results.md")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-tick-", dir=args.workdir))
    try:
        levels = [level(workdir, int(n), args.reps) for n in args.levels.split(",")]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results = {"when": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC", "cores": os.cpu_count(), "reps": args.reps,
               "levels": levels}  # fmt: skip
    print(report(results))
    if not args.no_write:
        write(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
