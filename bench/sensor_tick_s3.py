"""A landing sensor's tick against the size of a folder in a bucket: ``make bench-tick-s3``
(``python -m bench.sensor_tick_s3``). Spark-free; an S3-compatible server (S3Proxy on its
filesystem backend, started here on 127.0.0.1 and stopped afterwards).

For each folder size (default 10, 10,000 and 100,000 tiny objects named as a producer that embeds
a sequence names them; ``--levels``), the objects are made directly in the server's backend
folder (the fast way to a large bucket; the server lists them as uploaded objects), then the
events sensor built by the framework is evaluated with Dagster's ``build_sensor_context`` against
an ephemeral instance, its cursor carried from tick to tick: a first tick (a whole listing), then
``--reps`` ticks each with one new object uploaded just before, timed (median) and with the
listing requests each sent counted (a whole listing's as its pages of 1,000 keys). For reference, a whole listing of the folder through pyarrow (every
tick's listing before: one request per 1,000 keys).

S3Proxy's filesystem backend reads its whole directory for every listing request, with or
without ``start-after``, so its time per request grows with the folder where S3's does not: the
flat figure here is the requests a tick sends; its time is the server's.
Writes ``bench/sensor_tick_s3_results.json`` and the "sensor-tick-s3" block of ``bench/results.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from datetime import UTC, datetime

from bench.common import BENCH, log, median, write_block

RESULTS_JSON = BENCH / "sensor_tick_s3_results.json"
BLOCK_START, BLOCK_END = "<!-- sensor-tick-s3 -->", "<!-- /sensor-tick-s3 -->"
GRACE_S = 2.0


def level(server, count: int, reps: int, sent: list[str]) -> dict:  # type: ignore[no-untyped-def]
    import dagster as dg

    from lakehouse_assets.definitions import TABLES, build_definitions
    from lakehouse_assets.lib.engine.state import storage
    from lakehouse_assets.lib.orchestrate.jobs import landing_sources
    from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
    from lakehouse_assets.lib.orchestrate.sensors import SensorSettings, build_landing_sensor

    root = server.root(f"tick-{count}")
    folder = f"{root}/landing/events"
    backend = server.data / "buckets" / server.bucket / f"tick-{count}" / "landing" / "events"
    backend.mkdir(parents=True)
    began = time.perf_counter()
    for i in range(count):
        with open(backend / f"ev-{i:09d}.jsonl", "w") as out:
            out.write('{"event_id": "x"}\n')
    log(f"{count:,} objects made in {time.perf_counter() - began:.1f} s")
    job = next(j for j in build_definitions().jobs or [] if j.name == "ingest_events")
    sensor = build_landing_sensor(
        "events", landing_sources(TABLES)["events"], job, SensorSettings(settle_s=0, watch_s=0, grace_s=GRACE_S)
    )
    time.sleep(GRACE_S + 0.5)  # the history older than the cursor's grace window, as a year's is
    instance = dg.DagsterInstance.ephemeral()
    resources = {"lakehouse": LakehouseResource(root=root)}
    cursor: list[str | None] = [None]
    kinds: list[str] = []

    def tick() -> tuple[float, int]:
        sent.clear()
        context = dg.build_sensor_context(instance=instance, cursor=cursor[0], resources=resources)
        started = time.perf_counter()
        kinds.append(type(sensor(context)).__name__)
        cursor[0] = context.cursor
        return 1000 * (time.perf_counter() - started), len(sent)

    first_ms, _ = tick()
    ticks = []
    for i in range(reps):
        storage.write_text(f"{folder}/ev-{count + 1 + i:09d}.jsonl", '{"event_id": "y"}\n')
        ticks.append(tick())
    assert kinds[1:] == ["RunRequest"] * reps, kinds
    whole_ms = []
    for _ in range(3 if count < 100_000 else 1):
        started = time.perf_counter()
        listed = len(storage.list_entries(folder))
        whole_ms.append(1000 * (time.perf_counter() - started))
    assert listed == count + reps, listed
    log(f"{count:,}: tick {median([t for t, _ in ticks]):.1f} ms, {max(r for _, r in ticks)} request(s); "
        f"first {first_ms:.0f} ms; whole listing {median(whole_ms):.0f} ms")  # fmt: skip
    return {"objects": count, "first_tick_ms": first_ms, "tick_new_ms": [t for t, _ in ticks],
            "tick_requests": [r for _, r in ticks], "whole_listing_ms": whole_ms}  # fmt: skip


def report(results: dict) -> str:
    levels = results["levels"]
    base = median(levels[0]["tick_new_ms"])
    lines = [BLOCK_START, "## Sensor tick against a bucket folder's size", ""]
    lines.append(
        f"Written by `make bench-tick-s3` (`bench/sensor_tick_s3.py`, Spark-free) on {results['when']}, "
        f"{results['cores']} cores, against S3Proxy (filesystem backend) on 127.0.0.1; the events sensor built by "
        f"the framework, each tick figure the median of {results['reps']} ticks, each with one new object uploaded "
        "just before (names that sort by time); the history older than the cursor's grace window. From 1,000 files "
        "a tick asks for the keys after its name mark (`ListObjectsV2` with `start-after`), below it lists the "
        "folder whole (one page); before, every tick listed it whole (the last columns). S3Proxy's filesystem backend reads its whole directory at every request, so "
        "the tick's time grows with the folder there; S3 serves `start-after` from its index."
    )
    lines += ["", "| objects in the folder | tick with a new object | ratio to the smallest | listing requests a tick "
              "| first tick (whole listing) | whole listing (each tick before) | its requests |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for x in levels:
        tick = median(x["tick_new_ms"])
        pages = max(1, math.ceil((x["objects"] + results["reps"]) / 1000))
        lines.append(
            f"| {x['objects']:,} | {tick:.1f} ms | {tick / base:.2f}× | {max(x['tick_requests'])} "
            f"| {x['first_tick_ms']:.0f} ms | {median(x['whole_listing_ms']):.0f} ms | {pages:,} |"
        )
    last = levels[-1]
    requests = max(last["tick_requests"])
    lines += ["", "| target | now | |", "|---|---|---|",
              f"| listing requests of a tick with a new object at {last['objects']:,} objects: as at "
              f"{levels[0]['objects']:,} | {requests} against {max(levels[0]['tick_requests'])} "
              f"| **{'met' if requests <= max(levels[0]['tick_requests']) else 'missed'}** |"]  # fmt: skip
    lines += ["", "Why: [docs/operations.md](../docs/operations.md#what-a-sensor-tick-costs).", BLOCK_END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="10,10000,100000")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print, do not write bench/results.md")
    args = parser.parse_args(argv)

    from devstack.environment import environment
    from devstack.s3server import S3Server
    from lakehouse_assets.lib.engine.intake import entries
    from lakehouse_assets.lib.engine.state import s3_api

    sent: list[str] = []
    signed_send = s3_api.send

    def counted(settings, method, bucket, key="", **kwargs):  # type: ignore[no-untyped-def]
        sent.append(method)
        return signed_send(settings, method, bucket, key, **kwargs)

    whole_listing = entries.list_objects

    def whole(prefix, globs):  # type: ignore[no-untyped-def]
        listed = whole_listing(prefix, globs)
        sent.extend(["GET"] * max(1, math.ceil(len(listed) / 1000)))  # pyarrow's pages of 1,000 keys
        return listed

    s3_api.send = counted  # type: ignore[assignment]
    entries.list_objects = whole  # type: ignore[assignment]
    with S3Server() as server, environment(server.env()):
        levels = [level(server, int(n), args.reps, sent) for n in args.levels.split(",")]
    results = {"when": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC", "cores": os.cpu_count(), "reps": args.reps,
               "levels": levels}  # fmt: skip
    print(report(results))
    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps(results, indent=1))
        write_block(report(results), BLOCK_START, BLOCK_END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
