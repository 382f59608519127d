"""A pool of one slot on PostgreSQL admits one step at a time, however close the claims come.

Several processes' steps (here threads, each with its own storage and connections, as separate
processes have) claim the one slot of a pool at the same instant, round after round. At most one
may hold it; when the holder frees it, one of the waiting steps gets it on its next claim, as
Dagster's step loop retries a blocked claim.
"""

from __future__ import annotations

import inspect
import threading
import uuid

import pytest
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

from lakehouse_assets.lib.accel.pool_slots import PostgresEventLogStorage

CLAIMANTS = 6
ROUNDS = 25


def claim_at_once(storages: list[PostgresEventLogStorage], pool: str, step_key: str) -> list[str]:
    """Every storage claims the pool's slot for its own run at the same instant; the runs that got it."""
    start = threading.Barrier(len(storages))
    claimed: list[str] = []

    def claim(storage: PostgresEventLogStorage, run_id: str) -> None:
        start.wait()
        if storage.claim_concurrency_slot(pool, run_id, step_key).is_claimed:
            claimed.append(run_id)

    threads = [threading.Thread(target=claim, args=(s, f"run{i}")) for i, s in enumerate(storages)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return claimed


@pytest.fixture
def storages(postgres):
    url = postgres.create_database(f"pool_slots_{uuid.uuid4().hex[:8]}")
    made = [PostgresEventLogStorage(url) for _ in range(CLAIMANTS)]
    yield made
    for storage in made:
        storage.dispose()


def test_one_slot_is_held_by_one_step_however_close_the_claims(storages) -> None:
    step_key = "bronze_events"
    for round_no in range(ROUNDS):
        pool = f"lakehouse/race_{round_no}"
        storages[0].set_concurrency_slots(pool, 1)
        holders = claim_at_once(storages, pool, step_key)
        waiting = {f"run{i}": s for i, s in enumerate(storages)}
        # the slot passes from holder to holder until every step has had it, never to two at once
        served = []
        for _ in range(2 * CLAIMANTS):
            assert len(holders) <= 1, f"round {round_no}: {holders} all hold the one slot"
            for holder in holders:
                served.append(holder)
                waiting.pop(holder).free_concurrency_slot_for_step(holder, step_key)
            if not waiting:
                break
            holders = [run for run, s in waiting.items() if s.claim_concurrency_slot(pool, run, step_key).is_claimed]
        assert sorted(served) == sorted(f"run{i}" for i in range(CLAIMANTS)), (
            f"round {round_no}: only {served} got the slot"
        )


def test_the_claim_replaced_is_still_the_one_dagster_calls() -> None:
    """The override replaces a private method of Dagster's: an upgrade that renames it or changes
    its arguments must fail here rather than leave the override unused."""
    source = inspect.getsource(SqlEventLogStorage.claim_concurrency_slot)
    assert "self._claim_concurrency_slot(" in source
    ours, theirs = (inspect.signature(c._claim_concurrency_slot) for c in (PostgresEventLogStorage, SqlEventLogStorage))
    assert list(ours.parameters) == list(theirs.parameters)
