"""Burst rounds for ``measure_latency.py --burst`` (``make latency BURST=1``): one file lands in
each of the four sources at once, and the sensors do the rest.

A round ends when every bronze table has committed after the landing and no run has been queued
or going for ``quiet`` seconds (a failed run's retry, a follow-up run, would show up in that
time). Its figure is the last commit of any table in the round minus the landing: when every
table had taken the burst in. Each round also counts the runs it started, those that failed and
those that were retries of another (Dagster's ``dagster/parent_run_id`` tag).

With ``restart_engine`` a round kills the engine's server (SIGKILL of its process group) once a
run of the burst is going and starts it again on the same port 3 s later, as a service manager
would; the round then waits longer for quiet (a failed source's sensor asks again after a
back-off) and counts the failed runs that no later successful run of their job made good. With
``exact_against`` every round ends by reading every table through that engine and comparing it
with what the landed files say (the tests' own answers, ``lakehouse_assets_tests/support``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from devstack.dagster_dev import TRIED_AGAIN, delta_versions
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.paths import LakehousePaths

BRONZE = ["bronze_events", "bronze_customers", "bronze_ad_impressions", "bronze_ad_clicks"]


@dataclass
class Round:
    seconds: float
    runs: int
    failed: int
    retried: int
    tries_again: int = 0
    engine_restarted: bool = False
    runs_going_at_restart: int = 0
    unresolved: int = 0
    not_exact: str = ""


def _tables(paths: LakehousePaths) -> list[Path]:
    root = paths.local_path(f"{paths.root}/tables")
    return [p for p in root.iterdir() if (p / "_delta_log").is_dir()] if root.is_dir() else []


def _last_commit_after(table: Path, after: float) -> float | None:
    later = [t for _, t in delta_versions(table) if t > after]
    return max(later) if later else None


def _restart_engine(server, timeout: float) -> int:
    """Kill the engine 4 s into the burst's first run, start it 3 s later; the runs going then."""
    deadline = time.monotonic() + timeout
    while not server.runs(["STARTED"], limit=1):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no run of the burst started within {timeout}s")
        time.sleep(0.5)
    time.sleep(4)  # into the run: its process has reached the engine
    going = len(server.runs(["STARTED"]))
    server.engine.kill()
    time.sleep(3)
    server.engine.start()
    return going


def _unresolved(runs: list[dict]) -> int:
    """Failed runs with no later successful run of the same job."""
    return sum(
        1
        for r in runs
        if r["status"] == "FAILURE"
        and not any(
            o["jobName"] == r["jobName"] and o["status"] == "SUCCESS" and (o["startTime"] or 0) > (r["startTime"] or 0)
            for o in runs
        )
    )


def _tried_again(server, runs: list[dict]) -> int:
    """The steps' "trying ... again" warnings (a passing engine fault) in these runs."""
    return sum(1 for r in runs for message in server.run_messages(r["runId"]) if TRIED_AGAIN.search(message))


def not_exact(engine_url: str, root: str, events_only: bool = False) -> str:
    """Empty when every source's tables (``events_only``: the events chain's) hold what the
    landed files say, else what differs."""
    import dagster as dg

    from lakehouse_assets.lib.spark.session import engine_session
    from verification.contract import assert_every_source_exact
    from verification.lakehouse import Lakehouse
    from verification.runs import assert_events_exact

    spark = engine_session(engine_url)
    try:
        if events_only:
            assert_events_exact(spark, Path(root))
        else:
            assert_every_source_exact(Lakehouse(Path(root), spark, dg.DagsterInstance.ephemeral()))
        return ""
    except AssertionError as mismatch:
        return str(mismatch) or "a table differs from the landed files"
    except Exception as error:  # noqa: BLE001 - a table that cannot be read is not exact either
        return f"could not compare: {str(error).splitlines()[0][:300]}"
    finally:
        spark.stop()


def burst_round(
    server,
    paths: LakehousePaths,
    seed: int,
    rows: int,
    timeout: float,
    quiet: float = 10,
    restart_engine: bool = False,
    exact_against: str | None = None,
) -> Round:
    """Land a file in every source at once; wait until the burst is taken in (see the module)."""
    server.wait_idle(timeout, quiet=2)
    known = {r["runId"] for r in server.runs(limit=500)}
    landed = generate(paths, GeneratorOptions(files=1, rows=rows, late=0.0, gzip=0.0, seed=seed), None)
    arrived = min(p.stat().st_ctime for p in landed)
    going = 0
    if restart_engine:
        going = _restart_engine(server, timeout)
        quiet = max(quiet, 30)
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
        tries_again=_tried_again(server, runs),
        engine_restarted=restart_engine,
        runs_going_at_restart=going,
        unresolved=_unresolved(runs),
        not_exact=not_exact(exact_against, paths.root) if exact_against else "",
    )
