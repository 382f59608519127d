"""The preparation: everything that measures no time, side by side (``--parallel`` at a time):
the history process (section 4's data roots, section 1's framework root, section 6's runs; it
then waits to be told to measure), the driver's class archive when nobody else trains it, the
warm-up runs of section 1, section 3's batch and section 5's ``dagster dev`` with its first file.
See ``bench/run.py``'s docstring for the order."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from bench.common import Config, log
from bench.scenario import Scenario
from bench.sections.history import History, missing_class_archive
from bench.sections.latency import latency_server, tree_cpu
from bench.sections.throughput import throughput_files


def prepare(cfg: Config, workdir: Path, sections: set[str], parallel: int, pair: tuple[Scenario, Scenario] | None,
            history: History | None, results: dict) -> tuple[Future | None, list[Future], Future | None, BaseException | None]:  # fmt: skip
    """Run the preparation; returns section 5's server (a future of ``latency_server``), section 1's
    warm-up runs, section 3's batch and the history process's preparation error (``None`` when it
    prepared or did not run). Records the preparation's time and the waiting processes' CPU
    seconds in ``results``."""
    # With the history process, ``parallel`` processes at a time on 2 cores.
    with ThreadPoolExecutor(max(1, parallel - (1 if history else 0))) as pool:
        if history:
            history.start(pool)
        if not (history and history.elsewhere) and missing_class_archive():
            from lakehouse_assets.lib.accel.class_archive import build

            pool.submit(build, "devstack.archive_training")
        dev = pool.submit(latency_server, workdir) if "5" in sections else None
        # Section 1's framework root is ingested by the history process (or, without it, a CLI run).
        warm_ups = (
            ([] if history else [pool.submit(pair[0].dagster_cli)]) + [pool.submit(pair[1].plain)] if pair else []
        )
        batch = pool.submit(throughput_files, cfg, workdir) if "3" in sections else None
        prepare_t = time.monotonic()
        named = [("section 5's server", dev), ("section 3's batch", batch)] + [("section 1's warm-up", w) for w in warm_ups]  # fmt: skip
        named = [(n, f) for n, f in named if f]
        for name, f in named:
            f.add_done_callback(lambda _, name=name: log(f"prepared: {name}"))
        for _, f in named:
            try:
                f.result()
            except Exception as error:  # noqa: BLE001 - reported by the section that needs it
                log(f"preparation failed: {error}")
        prepared: BaseException | None = None
        if history:
            try:
                history.wait_prepared()
                log(
                    "prepared: the history process (section 4's data roots, section 1's framework root, section 6's runs)"
                )
            except Exception as error:  # noqa: BLE001 - reported by the sections that need it
                log(f"preparation failed: {error}")
                prepared = error
        results.setdefault("section_s", {})["preparation"] = round(time.monotonic() - prepare_t, 1)
        results["preparation_cpu_s"] = {
            "history process": history.gate.cpu_when_ready if history else None,
            "latency server": tree_cpu(dev.result()[0].dev) if dev and not dev.exception() else None,
        }
        log(
            f"preparation: {results['section_s']['preparation']:.0f}s; CPU-s of the waiting processes: "
            f"{results['preparation_cpu_s']}"
        )
    return dev, warm_ups, batch, prepared
