"""Section 5: landing-to-gold and Kafka-to-gold latency under ``dagster dev``
(``bench/measure_latency.py``), then bursts (a file in every source at once, ``bench/burst.py``),
on one server with a Kafka broker configured."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil

from bench.common import Config, log

# -- 5: latency -------------------------------------------------------------------------------


def _latency_script():
    from bench import measure_latency  # the drops' own module; imported late, it starts nothing

    return measure_latency


LATENCY_TIMEOUT = float(os.environ.get("BENCH_LATENCY_TIMEOUT", "600"))


class LatencyServer:
    """``dagster dev`` with its engine (as ``make dev KAFKA=1`` starts them) and a Kafka broker."""

    def __init__(self, dev, broker) -> None:
        self.dev, self.broker = dev, broker

    def stop(self) -> None:
        self.dev.stop()
        self.broker.stop()


def latency_server(workdir: Path) -> tuple:
    """A temporary ``dagster dev`` with the Spark Connect engine and a Kafka broker, as ``make dev
    KAFKA=1`` starts them, on its own instance and data root, with a first file landed so every
    table exists (not measured)."""
    from devstack.dagster_dev import DagsterDev
    from devstack.kafka_broker import KafkaBroker
    from lakehouse_assets.lib.paths import LakehousePaths

    paths = LakehousePaths(str(workdir / "latency" / "data"))
    broker = KafkaBroker(workdir / "latency" / "kafka").start()
    server = DagsterDev(
        root=paths.root, isolated=True, engine=True, env={"LAKEHOUSE_KAFKA_BOOTSTRAP": broker.bootstrap}
    )
    log(f"5. latency: starting dagster dev on {server.url} (data root {paths.root}, Kafka {broker.bootstrap})")
    try:
        server.start()
        _latency_script().warm_up(server, paths, 200, LATENCY_TIMEOUT)
    except BaseException:
        server.stop()
        broker.stop()
        raise
    return LatencyServer(server, broker), paths


def tree_cpu(server) -> float:
    """CPU seconds used so far by ``dagster dev`` (webserver, daemon, code server, runs) and its
    Spark Connect engine."""
    total = 0.0
    for top in (server.process, getattr(server.engine, "process", None)):
        if top is None:
            continue
        try:
            tree = psutil.Process(top.pid)
            for p in [tree, *tree.children(recursive=True)]:
                times = p.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            pass
    return round(total, 1)


def bench_latency(cfg: Config, server: LatencyServer, paths) -> dict:
    """``bench/measure_latency.py``'s drops against the server prepared by :func:`latency_server`:
    landed files (the landing sensor), then one Kafka message per drop (the Kafka sensor)."""
    script = _latency_script()
    t = time.monotonic()
    parts: list[dict] = []
    kafka_parts: list[dict] = []
    try:
        log(f"5. latency: {cfg.drops} drops, the landing sensor launching every run")
        drops = script.measure(server.dev, paths, cfg.drops, 200, LATENCY_TIMEOUT, parts)
        log(f"5. latency: {cfg.drops} Kafka messages, the Kafka sensor launching every run")
        messages = script.measure(
            server.dev, paths, cfg.drops, 200, LATENCY_TIMEOUT, kafka_parts, server.broker.bootstrap
        )
        log(f"5. latency: {cfg.bursts} bursts, a file in each of the four sources at once")
        bursts = [script.burst_round(server.dev, paths, 7000 + i, 200, LATENCY_TIMEOUT) for i in range(cfg.bursts)]
    finally:
        server.stop()
    return {
        "ok": True, "drops_s": drops, "wall_s": round(time.monotonic() - t, 1),
        "p50_s": script.percentile(drops, 0.5), "p95_s": script.percentile(drops, 0.95), "tail": "",
        "parts_median_s": script.median_parts(parts), "parts_drops": sum(1 for p in parts if p),
        "kafka": {
            "drops_s": messages, "p50_s": script.percentile(messages, 0.5), "p95_s": script.percentile(messages, 0.95),
            "parts_median_s": script.median_parts(kafka_parts), "parts_drops": sum(1 for p in kafka_parts if p),
        },
        "burst": {
            "rounds_s": [b.seconds for b in bursts], "p50_s": script.percentile([b.seconds for b in bursts], 0.5),
            "p95_s": script.percentile([b.seconds for b in bursts], 0.95), "runs": sum(b.runs for b in bursts),
            "failed": sum(b.failed for b in bursts), "retried": sum(b.retried for b in bursts),
        } if bursts else {},
    }  # fmt: skip
