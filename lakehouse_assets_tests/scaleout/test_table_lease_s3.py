"""The table lease against the real S3-compatible server (S3Proxy 4.1.0 on its filesystem
backend), Spark-free: its conditional write creates an object once, and once only when writers
race, and a wrong key is refused in one sentence; a second writer waits for a renewed lease and
gives up naming its holder; a killed writer's lease expires and the next writer takes it, after
which the killed writer is fenced.
The lease's logic in more cases, server-free: lakehouse_assets_tests/unit/test_table_lease.py."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from devstack.environment import environment
from devstack.s3server import S3Server
from lakehouse_assets.lib.engine.locking.conditional_put import put_if_absent
from lakehouse_assets.lib.engine.locking.lease_decision import LeaseRecord
from lakehouse_assets.lib.engine.locking.lease_store import S3LeaseStore
from lakehouse_assets.lib.engine.locking.table_lease import Fence
from lakehouse_assets.lib.engine.locking.writer_lock import writer_lock
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current


def test_s3proxy_creates_an_object_once_when_eight_writers_race_for_it(s3: S3Server) -> None:
    settings = current()
    assert put_if_absent(settings, s3.bucket, "race/first", b"one")
    assert not put_if_absent(settings, s3.bucket, "race/first", b"two")
    assert storage.read_text(f"s3a://{s3.bucket}/race/first") == "one"
    bodies = [b"%d" % i for i in range(8)]
    for key in ("race/1", "race/2", "race/3"):
        with ThreadPoolExecutor(8) as pool:
            won = list(pool.map(put_if_absent, [settings] * 8, [s3.bucket] * 8, [key] * 8, bodies))
        assert sum(won) == 1, won
    wrong = current({**s3.env(), "AWS_SECRET_ACCESS_KEY": "not-the-secret"})
    with pytest.raises(LakehouseError, match=r"^s3://lakehouse refused the table lease's conditional write .* \(403 "):
        put_if_absent(wrong, s3.bucket, "race/refused", b"x")


def test_a_renewed_lease_keeps_a_second_writer_waiting_until_it_gives_up_naming_the_holder(s3: S3Server) -> None:
    paths = LakehousePaths(s3.root("lease-renewed"))
    short = {"LAKEHOUSE_TABLE_LEASE_SECONDS": "0.9", "LAKEHOUSE_TABLE_LEASE_WAIT_SECONDS": "2"}
    waits: list[tuple[float | None, str | None]] = []
    with environment(short), writer_lock(paths).hold("orders", writer="run first") as fence:
        started = time.monotonic()
        second = writer_lock(paths).hold("orders", lambda s=None, holder=None: waits.append((s, holder)), "run 2nd")
        with pytest.raises(LakehouseError) as gave_up, second:
            pytest.fail("took a lease that its holder renews")
        waited = time.monotonic() - started
        assert isinstance(fence, Fence)
        fence.check()  # still the holder after more than twice the lease's duration
    assert waited >= 2.0
    assert waits and waits[0][1] is not None and waits[0][1].startswith("run first on ")
    assert str(gave_up.value).startswith("orders: gave up after waiting 2 s (LAKEHOUSE_TABLE_LEASE_WAIT_SECONDS)")
    names = storage.list_names(f"{paths.checkpoint('.locks')}/orders")
    assert names == ["000000000001.lease"]  # the lease lives beside the checkpoints, in the bucket
    record = storage.read_bytes(f"{paths.checkpoint('.locks')}/orders/{names[0]}")
    assert record is not None and LeaseRecord.from_bytes(1, record, 1.0).released
    assert LeaseRecord.from_bytes(1, record, 1.0).renewals >= 3


def test_a_killed_writers_lease_expires_and_the_killed_writer_is_fenced_after_the_takeover(s3: S3Server) -> None:
    paths = LakehousePaths(s3.root("lease-killed"))
    folder = f"{paths.checkpoint('.locks')}/orders"
    killed = LeaseRecord(1, "dead", "run killed", "host-9", 4242, "2026-11-27T18:00:00Z", 1.0)
    store = S3LeaseStore(f"s3://{s3.bucket}")
    assert store.create(f"{folder}/000000000001.lease", killed.to_bytes())  # taken, never renewed
    killed_fence = Fence(store, folder, "orders", 1, "dead")
    killed_fence.check()  # its holder could still write, until another writer takes over
    waits: list[tuple[float | None, str | None]] = []
    started = time.monotonic()
    with writer_lock(paths).hold("orders", lambda s=None, holder=None: waits.append((s, holder)), "run next"):
        took = time.monotonic() - started
        with pytest.raises(
            LakehouseError, match=r"^orders: this run no longer holds the table's lease \(now held by run next"
        ):
            killed_fence.check()
    assert 1.0 <= took < 10, took
    assert waits[0] == (None, "run killed on host-9 (pid 4242) since 2026-11-27T18:00:00Z")
    assert waits[-1][0] is not None and waits[-1][0] >= 1.0
