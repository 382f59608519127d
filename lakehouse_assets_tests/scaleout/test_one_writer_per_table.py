"""One writer per table on object storage, across Dagster instances: two
``dagster asset materialize`` processes with different ``DAGSTER_HOME``s (so Dagster's pools,
kept per instance, cannot keep them apart) materialize ``bronze_events`` at once on one bucket.

So that both are sure to meet a held lease, the test holds the table's lease itself (a writer
outside either instance) until both runs log that they wait for it, then lets go: the two runs
race for the lease, one takes it and the other waits for that one, naming its run. Both succeed,
and the table holds exactly the rows of the landed files, none lost and none twice. Without the
lease, neither run would wait, and the two queries on one checkpoint would stop each other on the
engine (or, on two drivers, skip a micro-batch as already written).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from devstack.dagster_dev import isolated_home
from lakehouse_assets.generate import GeneratorOptions
from lakehouse_assets.lib.engine.locking.writer_lock import writer_lock
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets_tests.scaleout.stack import Stack, land_round
from verification.crash import Outcome
from verification.expected import ExpectedEvents
from verification.runs import wait_for

pytestmark = pytest.mark.slow
SELECTION = "bronze_events,bronze_events_quarantine"
WAITING = re.compile(r"^bronze_events: another run is writing this table; waiting for it \((.+) on \S+ \(pid \d+\)")
WAITED = re.compile(r"^bronze_events: waited [\d.]+s for the other writer$")


def run_messages(home: Path) -> dict[str, list[str]]:
    """Every message of each run of the instance at ``home``, by run id."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return {run.run_id: [r.user_message for r in instance.all_logs(run.run_id)] for run in instance.get_runs()}


def holders_waited_for(home: Path) -> list[str]:
    """Whom the instance's run said it waited for, in order."""
    return [m.group(1) for lines in run_messages(home).values() for line in lines if (m := WAITING.match(line))]


def test_two_instances_materializing_one_table_on_a_bucket_take_turns_and_lose_no_row(
    stack: Stack, spark, tmp_path: Path
) -> None:
    root = stack.s3.root("one-writer")
    reference = tmp_path / "reference"
    start = datetime(2026, 11, 22, 8, tzinfo=UTC)
    land_round(root, reference, GeneratorOptions(files=3, rows=400, seed=9, start=start), ["events"])
    homes = {name: isolated_home(tmp_path / name / "dagster_home") for name in ("first", "second")}
    for home in homes.values():
        dg.DagsterInstance.from_config(str(home)).dispose()  # its schema, before a process races to make it

    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        with writer_lock(LakehousePaths(root)).hold("bronze_events", writer="the test"):
            runs: dict[str, Future[Outcome]] = {
                name: pool.submit(stack.materialize, name, root, {"DAGSTER_HOME": str(home)}, SELECTION)
                for name, home in homes.items()
            }

            def both_wait() -> bool:
                for name, run in runs.items():
                    assert not run.done(), f"run {name} ended before it met the lease: {run.result().output}"
                return all(holders_waited_for(home) for home in homes.values())

            wait_for(both_wait, 300, "both runs to wait for the test's lease")
        outcomes = {name: run.result() for name, run in runs.items()}
    elapsed = time.monotonic() - started
    for name, outcome in outcomes.items():
        assert outcome.returncode == 0, f"{name}: {outcome.output}"

    messages = {name: run_messages(home) for name, home in homes.items()}
    (first_id,), (second_id,) = (list(messages[name]) for name in ("first", "second"))
    waited_for = {name: holders_waited_for(home) for name, home in homes.items()}
    # Both waited for the test; after it let go, one took the lease and the other waited for it.
    took_turns = [
        (["the test"], ["the test", f"run {first_id}"]),
        (["the test", f"run {second_id}"], ["the test"]),
    ]
    assert (waited_for["first"], waited_for["second"]) in took_turns, waited_for
    for name, by_run in messages.items():
        assert any(WAITED.match(line) for lines in by_run.values() for line in lines), (name, by_run)

    expected = ExpectedEvents(reference)
    bronze = spark.read.format("delta").load(LakehousePaths(root).table("bronze_events"))
    got = Counter(
        (r._source_file.rsplit("/", 1)[-1], r.event_id) for r in bronze.select("_source_file", "event_id").collect()
    )
    assert got == Counter((r["_file"], r.get("event_id")) for r in expected.bronze)
    quarantine = spark.read.format("delta").load(LakehousePaths(root).table("bronze_events_quarantine"))
    bad = Counter((r.raw_line, r._source_file.rsplit("/", 1)[-1]) for r in quarantine.collect())
    assert bad == Counter(expected.bad_lines) and expected.bad_lines, "the quarantine differs from the landed bad lines"
    print(
        f"two instances, one table: both runs waited, one for the other; {sum(got.values())} rows and "
        f"{sum(bad.values())} bad lines exact; {elapsed:.0f}s (runs: "
        + ", ".join(f"{n} {o.seconds:.0f}s" for n, o in outcomes.items())
        + ")"
    )
