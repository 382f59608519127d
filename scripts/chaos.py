"""``make chaos``: many SIGKILLs at random instants across landing rounds, then a tally.

    python scripts/chaos.py --kills 200 --kills-per-round 20 --jobs 2

Each round lands a new generated batch of every source, starts ``dagster asset materialize``
of the whole graph in a child process group and SIGKILLs the group (Python and the Spark JVM)
at a random instant, ``--kills-per-round`` times, then lets one run finish. Every table is then
compared with its answer, and the rows lost and duplicated are tallied:

* the events chain against the answer computed in plain Python from the landed files,
* ``silver_customers`` against the SCD2 history computed in plain Python,
* every table (bronze, quarantines, MERGE, SCD2, watermark-driven gold) against a clean
  reference run: a second data root that receives the same files and runs once per round
  with no faults, which is what the contract's "Runs" section promises equality with.

``--jobs N`` runs N such lanes (each its own subject and reference root) side by side: a kill
costs wall-clock time, not CPU, so lanes multiply the kills an hour gives.

``--kafka`` starts a Kafka broker per lane: each round also produces generated events (bad values
and re-deliveries included) to its topic ``events`` (3 partitions), which ``bronze_events`` reads
as its second flow in the subject and the reference alike, and the tally counts every message.

``--engine`` makes every subject run a client of a Spark Connect engine the lane starts (what
``make dev`` does), and aims a share of the kills (``--engine-share``) at the engine instead of
the run: the engine and its Python workers are SIGKILLed mid-run and started again on the same
port 3 s later, as ``make dev`` does; the run waits for it and goes on, or fails and the next
one goes on. The reference runs keep their own embedded JVM.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from kafka.admin import KafkaAdminClient, NewTopic
from pyspark.sql import SparkSession

from devstack.connect_server import ConnectServer
from devstack.kafka_broker import KafkaBroker
from devstack.ports import free_port
from lakehouse_assets.generate import Generator, GeneratorOptions, generate
from lakehouse_assets.lib.brokers.kafka_produce import produce_lines
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.spark.session import get_spark
from verification.crash import Outcome, materialize_in_child
from verification.expected import ExpectedEvents, expected_history, history_rows, scd2_row
from verification.reference import lost_and_duplicated, mirror_landing


def _read(spark: SparkSession, root: Path, table: str):
    return spark.read.format("delta").load(str(root / "tables" / table))


def _source(value: str) -> str:
    return value if value.startswith("kafka://") else Path(value).name


def independent_tally(
    root: Path, spark: SparkSession, messages: list[tuple[str | None, str]]
) -> dict[str, tuple[int, int]]:
    """(lost, duplicated) rows against the answers computed in plain Python."""
    expected = ExpectedEvents(root, messages)
    per_source = Counter(expected.lines_per_file)
    per_source.update(r["_file"] for r in expected.bronze if r["_file"].startswith("kafka://"))
    per_source.update(uri for _, uri in expected.bad_lines if uri.startswith("kafka://"))
    result: dict[str, tuple[int, int]] = {}
    stored = Counter(_source(r[0]) for r in _read(spark, root, "bronze_events").select("_source_file").collect())
    stored += Counter(
        _source(r[0]) for r in _read(spark, root, "bronze_events_quarantine").select("_source_file").collect()
    )
    lost = sum(max(0, n - stored[f]) for f, n in per_source.items())
    dup = sum(max(0, stored[f] - per_source[f]) for f in stored)
    result["bronze_events + quarantine (plain Python)"] = (lost, dup)
    silver = Counter(r[0] for r in _read(spark, root, "silver_events").select("event_id").collect())
    result["silver_events (plain Python)"] = (
        len(set(expected.silver) - set(silver)),
        sum(n - 1 for n in silver.values() if n > 1),
    )
    gold = Counter(
        (r[0], r[1], r[2])
        for r in _read(spark, root, "gold_hourly_revenue").select("window_start", "category", "orders").collect()
    )
    answer = Counter((k[0], k[1], v[1]) for k, v in expected.hourly_revenue().items())
    result["gold_hourly_revenue (plain Python)"] = (sum((answer - gold).values()), sum((gold - answer).values()))
    history, _, _ = expected_history(root)
    want = history_rows(history)
    got = Counter(scd2_row(r) for r in _read(spark, root, "silver_customers").collect())
    result["silver_customers SCD2 (plain Python)"] = (sum((want - got).values()), sum((got - want).values()))
    return result


@dataclass
class Lane:
    """One subject root killed over and over, with its clean reference root beside it."""

    index: int
    work: Path
    rng: random.Random
    engine: ConnectServer | None = None
    broker: KafkaBroker | None = None
    messages: list[tuple[str | None, str]] = field(default_factory=list)
    kills: int = 0
    engine_kills: int = 0
    attempts: int = 0
    rounds: int = 0
    totals: Counter = field(default_factory=Counter)

    def run(self, args: argparse.Namespace, quota: int, spark: SparkSession, tally_lock: threading.Lock) -> None:
        subject, reference = self.work / "subject", self.work / "reference"
        while self.kills < quota:
            self.rounds += 1
            start = datetime(2026, 11, 20, self.rounds % 24, tzinfo=UTC)
            seed = self.index * 1000 + self.rounds
            options = GeneratorOptions(files=2, rows=200, seed=seed, start=start, duplicate=0.1, late=0.2)
            files = generate(LakehousePaths(str(subject / "lakehouse")), options)
            mirror_landing(files, subject / "lakehouse", reference / "lakehouse")
            if self.broker:
                # Another seed: other events than the files' (a shared event_id is a re-delivery).
                lines: list[str | None] = list(
                    Generator(replace(options, seed=seed + 500_000)).event_lines(options.rows)
                )
                self.messages += zip(
                    lines, produce_lines(self.broker.bootstrap, "events", lines, partitions=3), strict=True
                )
            # The clean run needs nothing from the subject: it runs while the kills go on.
            clean: list[Outcome] = []
            clean_run = threading.Thread(
                target=lambda clean=clean: clean.append(
                    materialize_in_child(reference, args.select, env=self.kafka_env)
                )
            )
            clean_run.start()
            for _ in range(args.kills_per_round):
                self.attempts += 1
                self.kills += self.attempt(args, subject)
            final = materialize_in_child(subject, args.select, env=self.remote)
            clean_run.join()
            for outcome, what in ((final, "the run after the kills"), (clean[0], "the clean reference run")):
                if outcome.returncode != 0:
                    raise RuntimeError(f"lane {self.index} round {self.rounds}: {what} failed:\n{outcome.output}")
            with tally_lock:
                spark.catalog.clearCache()
                tally = independent_tally(subject / "lakehouse", spark, self.messages)
                tally |= {
                    f"{t} (clean run)": v
                    for t, v in lost_and_duplicated(spark, subject / "lakehouse", reference / "lakehouse").items()
                }
            bad = {t: v for t, v in tally.items() if any(v)}
            for table, (lost, dup) in tally.items():
                self.totals[(table, "lost")] += lost
                self.totals[(table, "duplicated")] += dup
            _say(
                f"lane {self.index} round {self.rounds}: {self.kills} kills ({self.engine_kills} of the engine, "
                f"{self.attempts} attempts), "
                f"{len(tally)} tables compared" + (f"; MISMATCH {bad}" if bad else "; every table exact")
            )

    @property
    def kafka_env(self) -> dict[str, str]:
        return {"LAKEHOUSE_KAFKA_BOOTSTRAP": self.broker.bootstrap} if self.broker else {}

    @property
    def remote(self) -> dict[str, str]:
        return {**self.kafka_env, **({"SPARK_REMOTE": self.engine.url} if self.engine else {})}

    def attempt(self, args: argparse.Namespace, subject: Path) -> bool:
        """One subject run killed at a random instant: the run, or (``--engine``) its engine."""
        delay = self.rng.uniform(args.min_seconds, args.max_seconds)
        if self.engine is None or self.rng.random() >= args.engine_share:
            return materialize_in_child(subject, args.select, kill_after=delay, env=self.remote).killed
        engine = self.engine
        killed = threading.Event()

        def kill_and_restart() -> None:
            engine.kill()
            killed.set()
            time.sleep(3)
            engine.start()

        timer = threading.Timer(delay, kill_and_restart)
        timer.start()
        materialize_in_child(subject, args.select, env=self.remote)
        timer.cancel()
        timer.join()  # a restart under way ends before the next run
        if not killed.is_set():
            return False  # the run ended first
        self.engine_kills += 1
        return True


_started = time.monotonic()


def _say(message: str) -> None:
    print(f"[{(time.monotonic() - _started) / 60:5.1f} min] {message}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=200, help="kills in all, shared out over the lanes")
    parser.add_argument("--kills-per-round", type=int, default=20)
    parser.add_argument("--min-seconds", type=float, default=3, help="earliest kill after the run starts")
    parser.add_argument("--max-seconds", type=float, default=60, help="latest kill after the run starts")
    parser.add_argument("--select", default="*", help="assets to materialize (default: the whole graph)")
    parser.add_argument(
        "--jobs", type=int, default=1, help="independent lanes (data roots) killed side by side; kills are wall-clock"
    )
    parser.add_argument("--engine", action="store_true", help="runs are clients of a Spark Connect engine per lane")
    parser.add_argument(
        "--kafka", action="store_true", help="a Kafka broker per lane; events also arrive through topic events"
    )
    parser.add_argument(
        "--engine-share", type=float, default=0.5, help="with --engine: share of kills aimed at the engine"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", help="keep the data roots here (default: a new temporary folder)")
    args = parser.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="lakehouse-chaos-"))
    spark = get_spark()
    lanes = [Lane(i, work / f"lane-{i}", random.Random(args.seed * 100 + i)) for i in range(args.jobs)]
    for lane in lanes:
        lane.work.mkdir(parents=True, exist_ok=True)
    quota = -(-args.kills // args.jobs)
    _say(
        f"chaos in {work}: {args.kills} kills over {args.jobs} lane(s), {args.kills_per_round} per round, "
        f"kill {args.min_seconds:g}-{args.max_seconds:g} s after start, select {args.select!r}"
        + (f", runs through an engine per lane, {args.engine_share:.0%} of kills at the engine" if args.engine else "")
    )
    failures: list[str] = []
    tally_lock = threading.Lock()

    def run_lane(lane: Lane) -> None:
        try:
            if args.kafka:
                lane.broker = KafkaBroker(lane.work / "kafka").start()
                admin = KafkaAdminClient(bootstrap_servers=lane.broker.bootstrap)
                admin.create_topics([NewTopic("events", 3, 1)])
                admin.close()
            if args.engine:
                with open(lane.work / "engine.log", "ab") as log, ConnectServer(free_port(), log=log) as lane.engine:
                    lane.run(args, quota, spark, tally_lock)
            else:
                lane.run(args, quota, spark, tally_lock)
        except Exception as error:  # noqa: BLE001 - reported with the tally, other lanes go on
            failures.append(f"lane {lane.index}: {error}")
        finally:
            if lane.broker:
                lane.broker.stop()

    threads = [threading.Thread(target=run_lane, args=(lane,)) for lane in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    totals: Counter = Counter()
    for lane in lanes:
        totals.update(lane.totals)  # update keeps the zero counts (Counter + Counter drops them)
    kills, attempts = sum(lane.kills for lane in lanes), sum(lane.attempts for lane in lanes)
    rounds = sum(lane.rounds for lane in lanes)
    engine_kills = sum(lane.engine_kills for lane in lanes)
    print(
        f"\n{kills} kills ({engine_kills} of the engine) in {attempts} attempts over {rounds} rounds; "
        "rows lost / duplicated after each round:"
    )
    for table in sorted({t for t, _ in totals}):
        print(f"  {table:50} lost {totals[(table, 'lost')]:>5}   duplicated {totals[(table, 'duplicated')]:>5}")
    bad_rows = sum(totals.values())
    for failure in failures:
        print(f"ERROR {failure}")
    if failures:
        print("FAIL: a run that should have finished did not (see above)")
    else:
        print("PASS: zero lost, zero duplicated" if bad_rows == 0 else f"FAIL: {bad_rows} rows lost or duplicated")
    raise SystemExit(1 if bad_rows or failures else 0)


if __name__ == "__main__":
    main()
