"""Landing-to-gold latency: drop events files one at a time and time each until gold changes.

    make latency                      # uses `make dev` on 127.0.0.1:3000 if it is up, else starts it
    .venv/bin/python bench/measure_latency.py --drops 10 --isolated

For each drop it waits until no run is queued or going, lands one generated events file (written
under a ``_`` name, then renamed: the contract's protocol), and waits for a new Delta version of
``gold_hourly_revenue``. The latency of a drop is the new version's commit time minus the file's
arrival (its rename). Nothing is launched by hand: the landing sensor does everything. Prints
every drop, then p50 and p95.

* ``--url``: a running ``dagster dev`` (default ``http://127.0.0.1:$DAGSTER_PORT``, port 3000).
  Its data root must be this script's (``$LAKEHOUSE_ROOT``, default ``data/``).
* ``--kafka``: instead of files, produce one purchase event per drop to Kafka topic ``events``
  (a broker the script starts, or ``$LAKEHOUSE_KAFKA_BOOTSTRAP`` with a running ``make dev
  KAFKA=1``); the Kafka sensor does the rest. The latency is the gold commit minus the broker's
  acknowledgement of the message.
* ``--steady`` (``make latency STEADY=1``): each drop lands the moment the last one reached
  gold, while its run still writes its other tables (a steady feed), not when the instance is idle.
* ``--burst`` (``make latency BURST=1``): each round lands a file in all four sources at once and
  times until every table has taken it in, with the runs started, failed and retried
  (``bench/burst.py``); ``--drops`` is the number of rounds. With ``--isolated`` each round ends
  with every table compared with the landed files, read through the engine. ``--engine-restarts
  N`` (with ``--isolated``): in N of the rounds (every other one from the second) the engine is
  killed once a run is going and started again 3 s later; failed runs that nothing made good by
  the round's end are counted.
* If nothing answers there, the script starts ``dagster dev`` itself on a free port, with the
  repository's instance (or, with ``--isolated``, a temporary instance and data root, so it
  disturbs nothing), and stops it at the end. Like ``make dev`` it starts the Spark Connect
  engine beside it (``--embedded-spark``: without, one JVM per run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import json  # noqa: E402
import uuid  # noqa: E402
from datetime import UTC, datetime  # noqa: E402

from bench.burst import Round, burst_round, not_exact  # noqa: E402
from devstack.dagster_dev import DagsterDev, delta_versions  # noqa: E402
from devstack.kafka_broker import KafkaBroker  # noqa: E402
from lakehouse_assets.generate import GeneratorOptions, generate  # noqa: E402
from lakehouse_assets.lib.brokers.kafka_produce import produce_lines  # noqa: E402
from lakehouse_assets.lib.paths import LakehousePaths  # noqa: E402

GOLD = "gold_hourly_revenue"


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


class Remote:
    """A dagster dev someone else started (``make dev``): only its GraphQL is used."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")

    graphql = DagsterDev.graphql
    runs = DagsterDev.runs
    run_messages = DagsterDev.run_messages
    wait_idle = DagsterDev.wait_idle


def reachable(url: str) -> bool:
    try:
        return requests.get(f"{url}/server_info", timeout=3).ok
    except requests.RequestException:
        return False


def drop_file(paths: LakehousePaths, seed: int, rows: int) -> tuple[Path, float]:
    (landed,) = generate(paths, GeneratorOptions(files=1, rows=rows, late=0.0, gzip=0.0, seed=seed), ["events"])
    return landed, landed.stat().st_ctime  # arrival = the rename into place


def produce_purchase(servers: str) -> tuple[str, float]:
    """One valid purchase event to topic ``events``; its ``kafka://`` URI and acknowledgement time."""
    event = {
        "event_id": str(uuid.uuid4()), "event_time": datetime.now(UTC).isoformat(), "user_id": "c00001",
        "event_type": "purchase", "product_id": "p0001", "category": "books", "amount": 12.5,
    }  # fmt: skip
    (uri,) = produce_lines(servers, "events", [json.dumps(event)])
    return uri, time.time()


def wait_for_gold(paths: LakehousePaths, after_version: int, timeout: float) -> tuple[int, float]:
    table = paths.local_path(paths.table(GOLD))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        newer = [v for v in delta_versions(table) if v[0] > after_version]
        if newer:
            return newer[0]
        time.sleep(0.2)
    raise TimeoutError(f"{GOLD} got no new version within {timeout}s")


def current_version(paths: LakehousePaths) -> int:
    versions = delta_versions(paths.local_path(paths.table(GOLD)))
    return versions[-1][0] if versions else -1


def warm_up(server, paths: LakehousePaths, rows: int, timeout: float) -> None:
    """Land a first file so every table exists (not measured), unless gold exists already."""
    if current_version(paths) < 0:
        print("warm-up: landing a first file so every table exists (not measured) ...", flush=True)
        server.wait_idle(timeout, quiet=2)
        drop_file(paths, seed=int(time.time()), rows=rows)
        wait_for_gold(paths, -1, timeout)


RUN_LOGS = """query Logs($runId: ID!) {
  runOrError(runId: $runId) { ... on Run { creationTime } }
  logsForRun(runId: $runId, limit: 2000) {
    ... on EventConnection { events { __typename ... on MessageEvent { timestamp stepKey } } }
  }
}"""


def breakdown(server, arrived: float, committed: float, job: str = "ingest_events") -> dict[str, float] | None:
    """Split one drop's latency along the run the sensor launched for it (the newest run of
    ``job``): ``sensor`` (arrival to the run's creation: the daemon's next pass and the settle
    time), ``queue`` (to the run's launch), ``run_start`` (a new run process: Python, Dagster and
    the code location), each step on the way to gold (``<table>``: its query and metadata, then
    ``<table>/checks``: its checks; the gaps between steps go to the step after), and
    ``gold_until_commit``. None when the run or its events cannot be read."""
    try:
        run = next((r for r in server.runs(limit=5) if r["jobName"] == job), None)
        data = server.graphql(RUN_LOGS, {"runId": run["runId"]}) if run else None
    except Exception:  # noqa: BLE001 - the breakdown is a diagnosis; the latency stands without it
        return None
    if not data or "creationTime" not in (data.get("runOrError") or {}):
        return None
    events = [(e["__typename"], e.get("stepKey"), int(e["timestamp"]) / 1000)
              for e in data["logsForRun"].get("events", []) if e.get("timestamp")]  # fmt: skip
    first = lambda kind, step=None: next((t for k, s, t in events if k == kind and (step is None or s == step)), None)  # noqa: E731
    created = data["runOrError"]["creationTime"]
    starting, started = first("RunStartingEvent"), first("RunStartEvent")
    if starting is None or started is None:
        return None
    parts = {"sensor": created - arrived, "queue": starting - created, "run_start": started - starting}
    at = started
    for step in ("bronze_events", "silver_events"):
        success = first("ExecutionStepSuccessEvent", step)
        materialized = [t for k, s, t in events if k == "MaterializationEvent" and s == step]
        if success is None or not materialized:
            return None
        parts[step] = max(materialized) - at
        parts[f"{step}/checks"] = success - max(materialized)
        at = success
    parts["gold_until_commit"] = committed - at
    return {k: round(v, 2) for k, v in parts.items()}


def median_parts(parts: list[dict[str, float]]) -> dict[str, float]:
    """The median of each part over the drops whose :func:`breakdown` could be read."""
    known = [p for p in parts if p]
    return {k: round(statistics.median(p[k] for p in known), 2) for k in known[0]} if known else {}


def measure(
    server,
    paths: LakehousePaths,
    drops: int,
    rows: int,
    timeout: float,
    parts: list[dict] | None = None,
    kafka: str | None = None,
    steady: bool = False,
) -> list[float]:
    """Latency of each of ``drops`` drops (files, or with ``kafka`` one message each); ``parts``
    (if given) gets each drop's :func:`breakdown`. ``steady``: each drop lands the moment the
    last one is in gold, whatever is still going (the last run's other tables), not when idle."""
    warm_up(server, paths, rows, timeout)
    latencies = []
    for i in range(drops):
        if not steady or i == 0:
            server.wait_idle(timeout, quiet=1)
        before = current_version(paths)
        if kafka:
            name, arrived = produce_purchase(kafka)
        else:
            landed, arrived = drop_file(paths, seed=int(time.time() * 1000) % 2**31 + i, rows=rows)
            name = landed.name
        version, committed = wait_for_gold(paths, before, timeout)
        latency = committed - arrived
        latencies.append(latency)
        print(f"drop {i + 1:2d}/{drops}: {name} -> {GOLD} v{version} after {latency:6.1f}s", flush=True)
        if parts is not None and not steady:
            server.wait_idle(timeout)  # the run's events are complete
            split = breakdown(server, arrived, committed, job="ingest_kafka_events" if kafka else "ingest_events")
            parts.append(split or {})
            if split:
                print("         " + ", ".join(f"{k} {v:.1f}s" for k, v in split.items()), flush=True)
    return latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drops", type=int, default=10)
    parser.add_argument("--rows", type=int, default=200, help="events per dropped file")
    parser.add_argument("--url", default=f"http://127.0.0.1:{os.environ.get('DAGSTER_PORT', '3000')}")
    parser.add_argument("--isolated", action="store_true", help="own temporary instance and data root")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for one drop")
    parser.add_argument(
        "--embedded-spark",
        action="store_true",
        help="when starting dagster dev: no Spark Connect engine (a JVM per run)",
    )
    parser.add_argument("--kafka", action="store_true", help="one message per drop to Kafka topic events, not a file")
    parser.add_argument("--burst", action="store_true", help="each round a file in every source at once")
    parser.add_argument(
        "--steady", action="store_true", help="each drop as soon as the last one is in gold, not when idle"
    )
    parser.add_argument("--engine-restarts", type=int, default=0, help="with --burst: rounds that restart the engine")
    args = parser.parse_args(argv)
    if args.drops < 1:
        parser.error("--drops must be at least 1")
    if args.engine_restarts and (
        not (args.burst and args.isolated) or args.embedded_spark or 2 * args.engine_restarts > args.drops
    ):
        parser.error("--engine-restarts needs --burst --isolated (its own engine) and --drops >= 2 per restart")

    tmp, broker = None, None
    kafka = os.environ.get("LAKEHOUSE_KAFKA_BOOTSTRAP") if args.kafka else None
    if args.kafka and not (kafka and not args.isolated and reachable(args.url)):
        broker = KafkaBroker(Path(tempfile.mkdtemp(prefix="lakehouse-latency-kafka-"))).start()
        kafka = broker.bootstrap
        print(f"started a Kafka broker on {kafka}", flush=True)
    extra_env = {"LAKEHOUSE_KAFKA_BOOTSTRAP": kafka} if kafka else {}
    if not args.isolated and reachable(args.url):
        paths = LakehousePaths.from_env()
        print(f"using the running dagster dev at {args.url}, data root {paths.root}", flush=True)
        server, started = Remote(args.url), None
    else:
        if args.isolated:
            tmp = tempfile.TemporaryDirectory(prefix="lakehouse-latency-")
            paths = LakehousePaths(f"{tmp.name}/data")
            started = DagsterDev(root=paths.root, isolated=True, engine=not args.embedded_spark, env=extra_env)
        else:
            paths = LakehousePaths.from_env()
            started = DagsterDev(root=paths.root, engine=not args.embedded_spark, env=extra_env)
        print(f"starting dagster dev on {started.url} (data root {paths.root}) ...", flush=True)
        started.start()
        server = started
    parts: list[dict] = []
    rounds: list[Round] = []
    try:
        if args.burst:
            warm_up(server, paths, args.rows, args.timeout)
            engine = getattr(server, "engine", None)
            exact_against = engine.url if engine is not None and args.isolated else None
            for i in range(args.drops):
                seed = int(time.time() * 1000) % 2**31 + i
                restart = i % 2 == 1 and i // 2 < args.engine_restarts
                rounds.append(burst_round(server, paths, seed, args.rows, args.timeout, restart_engine=restart,
                                          exact_against=exact_against))  # fmt: skip
                r = rounds[-1]
                note = f" (engine restarted, {r.runs_going_at_restart} runs going)" if restart else ""
                print(f"burst {i + 1:2d}/{args.drops}{note}: every table took it "
                      f"in after {r.seconds:6.1f}s; {r.runs} runs, {r.failed} failed, {r.retried} retries, "
                      f"{r.tries_again} tries again, "
                      f"{r.unresolved} failed and not made good; "
                      f"{'NOT EXACT: ' + r.not_exact if r.not_exact else 'exact' if exact_against else 'not compared'}",
                      flush=True)  # fmt: skip
            latencies = [r.seconds for r in rounds]
        else:
            latencies = measure(server, paths, args.drops, args.rows, args.timeout, parts, kafka, args.steady)
            engine = getattr(server, "engine", None)
            if args.steady and args.isolated and engine is not None:
                server.wait_idle(args.timeout, quiet=2)  # the overlapping runs' tails, then every table
                wrong = not_exact(engine.url, paths.root, events_only=True)
                print(
                    f"after the steady drops, the events chain: {'NOT EXACT: ' + wrong if wrong else 'exact'}",
                    flush=True,
                )
                if wrong:
                    return 1
    finally:
        if started:
            started.stop()
        if broker:
            broker.stop()
        if tmp:
            tmp.cleanup()
    p50, p95 = percentile(latencies, 0.50), percentile(latencies, 0.95)
    if rounds:
        print(
            f"\nburst (a file in each of the four sources at once) -> every table, over {len(rounds)} rounds: "
            f"p50 {p50:.1f}s, p95 {p95:.1f}s (max {max(latencies):.1f}s); runs {sum(r.runs for r in rounds)}, "
            f"failed {sum(r.failed for r in rounds)}, retries {sum(r.retried for r in rounds)}, "
            f"tries again {sum(r.tries_again for r in rounds)}, "
            f"failed and not made good {sum(r.unresolved for r in rounds)}; engine restarted in "
            f"{sum(r.engine_restarted for r in rounds)} rounds; rounds not exact {sum(bool(r.not_exact) for r in rounds)}"
        )
        return 1 if any(r.not_exact or r.unresolved for r in rounds) else 0
    print(
        f"\n{'Kafka message' if kafka else 'landing'} -> {GOLD} latency over {len(latencies)} drops: "
        f"p50 {p50:.1f}s, p95 {p95:.1f}s (min {min(latencies):.1f}s, max {max(latencies):.1f}s, "
        f"mean {statistics.fmean(latencies):.1f}s)"
    )
    medians = median_parts(parts)
    if medians:
        print("median of each part: " + ", ".join(f"{k} {v:.1f}s" for k, v in medians.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
