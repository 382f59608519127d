"""Faults on the scale-out stack, one per round of landed data, each followed by a retry: every
table of the events chain then equals a clean local run over the same files (0 lost, 0 duplicated).

1. the worker (and its executors) SIGKILLed mid-run, and started again;
2. the S3-compatible server killed mid-run and started again on the same objects;
3. the engine SIGKILLed while it commits to the bucket: a fault hook in its Python worker kills
   its whole process group right after ``silver_events``' Delta commit, before the checkpoint
   records it; a new engine on the cluster serves the retry.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from devstack.environment import environment
from lakehouse_assets.generate import GeneratorOptions
from lakehouse_assets_tests.scaleout.stack import Stack, land_round
from verification.crash import FAULT_HOOK, Outcome
from verification.lakehouse import Lakehouse
from verification.reference import lost_and_duplicated
from verification.runs import assert_events_exact

pytestmark = pytest.mark.slow
CHAIN = [
    "bronze_events",
    "bronze_events_quarantine",
    "silver_events",
    "silver_events_quarantine",
    "gold_hourly_revenue",
]
START = datetime(2026, 11, 21, 8, tzinfo=UTC)


def run_with_fault(stack: Stack, name: str, root: str, env: dict[str, str], fault, after_s: float) -> Outcome:
    """Materialize the chain; ``fault()`` fires ``after_s`` seconds into the run. The fault has
    ended (the server or worker is back) when this returns; its error, if any, is raised."""
    errors: list[BaseException] = []

    def fire() -> None:
        try:
            fault()
        except BaseException as error:  # noqa: BLE001 - raised in the test's thread below
            errors.append(error)

    timer = threading.Timer(after_s, fire)
    timer.start()
    try:
        return stack.materialize(name, root, env, selection=",".join(CHAIN))
    finally:
        timer.cancel()  # not fired yet: never fires
        timer.join()  # firing: a run that failed fast must not be retried while the fault lasts
        if errors:
            raise errors[0]


def test_worker_loss_s3_restart_and_an_engine_killed_mid_commit_leave_exact_tables(
    stack: Stack, spark, tmp_path: Path
) -> None:
    root = stack.s3.root("faults")
    reference = Lakehouse(tmp_path / "reference", spark, dg.DagsterInstance.ephemeral())
    _, instance_env = stack.instance_home("faults")

    def lose_worker() -> None:
        stack.cluster.kill_worker()
        time.sleep(3)
        stack.cluster.start_worker()

    def engine_killed_at_commit():
        stack.engine.stop()
        hook = {"TEST_KILL_AT": "silver_events:after_table_write", "PYTHONPATH": str(FAULT_HOOK)}
        with environment(hook):
            return stack.new_engine("engine-with-fault.log")

    faults = [
        ("worker", lose_worker, 20.0),
        ("s3", lambda: stack.s3.restart(down_s=3), 15.0),
        ("commit", None, 0.0),
    ]
    outcomes = {}
    for number, (name, fault, after_s) in enumerate(faults, start=1):
        options = GeneratorOptions(files=2, rows=300, seed=60 + number, start=START + timedelta(hours=3 * number))
        land_round(root, reference.root, options)
        if fault is None:
            engine_killed_at_commit()
            first = stack.materialize(f"{name}-1", root, instance_env, selection=",".join(CHAIN))
            assert stack.engine.process is not None and stack.engine.process.wait(60) is not None, (
                "the fault did not fire"
            )
            stack.engine.stop()
            stack.new_engine("engine-after-fault.log")
        else:
            first = run_with_fault(stack, f"{name}-1", root, instance_env, fault, after_s)
            assert first.seconds > after_s, f"the run ended before the {name} fault: nothing was tested"
        retry = stack.materialize(f"{name}-2", root, instance_env, selection=",".join(CHAIN))
        assert retry.returncode == 0, retry.output
        outcomes[name] = (first.returncode, round(first.seconds), round(retry.seconds))
        reference.materialize(selection=CHAIN)  # type: ignore[arg-type] - a list of keys
        differing = {t: d for t, d in lost_and_duplicated(spark, root, reference.root, CHAIN).items() if any(d)}
        assert not differing, f"after the {name} fault: (missing, extra) rows per table: {differing}"
    assert outcomes["commit"][0] != 0, "the run whose engine was killed mid-commit succeeded: nothing was tested"
    assert_events_exact(spark, reference.root)
    print(f"faults: (first run's exit code, its seconds, the retry's seconds) = {outcomes}")
