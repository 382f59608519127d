"""Section 7: runs as clients of a warm Spark Connect engine (``SPARK_REMOTE``, what ``make dev``
does) against a run with its own embedded JVM and the plain PySpark script in a fresh process.

Like for like: the four sides run the same events chain on identical landed files, each in a
fresh process: the framework as a client of the engine, the framework with its own JVM, the plain
script with its own JVM, and the plain script as a client of the same engine (its
``foreachBatch`` handlers then run in the engine's Python workers, like the framework's)."""

from __future__ import annotations

import psutil

from bench.common import BUDGET, Config, log, median
from bench.scenario import Scenario


def _tree_rss(pid: int) -> int:
    try:
        root = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
    except psutil.Error:
        return 0


def bench_engine(cfg: Config, workdir) -> dict:
    from devstack.connect_server import ConnectServer
    from devstack.ports import free_port

    names = ("client", "embedded", "plain", "plain_client")
    client, embedded, plain, plain_client = (Scenario(workdir, f"engine-{n}") for n in names)
    client.land(cfg.base_files, cfg.small_rows, mirror=[embedded, plain, plain_client])
    with open(client.dir / "engine.log", "ab") as engine_log, ConnectServer(free_port(), log=engine_log) as engine:
        remote = {"SPARK_REMOTE": engine.url}
        log(f"7. engine: a Spark Connect engine on {engine.url}; warm-up runs of the four sides (not measured)")
        client.dagster_cli(extra_env=remote)
        embedded.dagster_cli()
        plain.plain()
        plain_client.plain(extra_env=remote)
        walls: dict[str, list[float]] = {n: [] for n in names}
        rss: dict[str, list[int]] = {n: [] for n in names}
        engine_peak = 0
        i = 0
        while BUDGET.more(i, min(3, cfg.reps), cfg.reps):
            client.land(1, cfg.small_rows, mirror=[embedded, plain, plain_client])
            runs = {
                "client": lambda: client.dagster_cli(extra_env=remote)[0],
                "embedded": lambda: embedded.dagster_cli()[0],
                "plain": lambda: plain.plain()[0],
                "plain_client": lambda: plain_client.plain(extra_env=remote)[0],
            }
            for side in list(runs) if i % 2 == 0 else list(reversed(runs)):
                proc = runs[side]()
                walls[side].append(proc.wall_s)
                rss[side].append(proc.peak_rss)
                engine_peak = max(engine_peak, _tree_rss(engine.process.pid))  # type: ignore[union-attr]
            log(f"   rep {i + 1}: client {walls['client'][-1]:.1f}s, embedded {walls['embedded'][-1]:.1f}s, "
                f"plain {walls['plain'][-1]:.1f}s, plain as a client {walls['plain_client'][-1]:.1f}s")  # fmt: skip
            i += 1
        idle = [client.dagster_cli(extra_env=remote)[0].wall_s for _ in range(max(3, cfg.overhead_reps))]
        log(f"   no new data, client of the engine: {median(idle):.1f}s")
    return {
        "client_s": walls["client"], "embedded_s": walls["embedded"], "plain_s": walls["plain"],
        "client_median_s": median(walls["client"]), "embedded_median_s": median(walls["embedded"]),
        "plain_median_s": median(walls["plain"]), "ratio_vs_plain": median(walls["client"]) / median(walls["plain"]),
        "plain_client_s": walls["plain_client"], "plain_client_median_s": median(walls["plain_client"]),
        "ratio_vs_plain_client": median(walls["client"]) / median(walls["plain_client"]),
        "plain_client_peak_rss": rss["plain_client"],
        "no_data_s": idle, "no_data_median_s": median(idle),
        "client_peak_rss": rss["client"], "embedded_peak_rss": rss["embedded"], "plain_peak_rss": rss["plain"],
        "engine_peak_rss": engine_peak,
    }  # fmt: skip
