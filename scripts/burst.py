"""Burst rounds for ``measure_latency.py --burst`` (``make latency BURST=1``): one file lands in
each of the four sources at once, and the sensors do the rest.

A round ends when every bronze table has committed after the landing and no run has been queued
or going for ``quiet`` seconds (a failed run's retry, a follow-up run, would show up in that
time). Its figure is the last commit of any table in the round minus the landing: when every
table had taken the burst in. Each round also counts the runs it started, those that failed and
those that were retries of another (Dagster's ``dagster/parent_run_id`` tag).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from devstack.dagster_dev import delta_versions
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.settings import LakehousePaths

BRONZE = ["bronze_events", "bronze_customers", "bronze_ad_impressions", "bronze_ad_clicks"]


@dataclass
class Round:
    seconds: float
    runs: int
    failed: int
    retried: int


def _tables(paths: LakehousePaths) -> list[Path]:
    root = paths.local_path(f"{paths.root}/tables")
    return [p for p in root.iterdir() if (p / "_delta_log").is_dir()] if root.is_dir() else []


def _last_commit_after(table: Path, after: float) -> float | None:
    later = [t for _, t in delta_versions(table) if t > after]
    return max(later) if later else None


def burst_round(server, paths: LakehousePaths, seed: int, rows: int, timeout: float, quiet: float = 10) -> Round:
    """Land a file in every source at once; wait until the burst is taken in (see the module)."""
    server.wait_idle(timeout, quiet=2)
    known = {r["runId"] for r in server.runs(limit=500)}
    landed = generate(paths, GeneratorOptions(files=1, rows=rows, late=0.0, gzip=0.0, seed=seed), None)
    arrived = min(p.stat().st_ctime for p in landed)
    bronze = [paths.local_path(paths.table(name)) for name in BRONZE]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(_last_commit_after(t, arrived) for t in bronze):
            server.wait_idle(max(deadline - time.monotonic(), 1), quiet=quiet)
            break
        time.sleep(0.5)
    else:
        raise TimeoutError(f"a bronze table did not take in the burst within {timeout}s")
    commits = [c for t in _tables(paths) if (c := _last_commit_after(t, arrived))]
    runs = [r for r in server.runs(limit=500) if r["runId"] not in known]
    tags = [{t["key"]: t["value"] for t in r["tags"]} for r in runs]
    return Round(
        seconds=max(commits) - arrived,
        runs=len(runs),
        failed=sum(r["status"] == "FAILURE" for r in runs),
        retried=sum("dagster/parent_run_id" in t for t in tags),
    )
