"""The table lease on object storage, Spark-free and server-free: its decisions (take, wait,
expired, renewed), and the whole lease over an in-memory store whose conditional create is
atomic like S3's: a second writer waits and names the holder, renewal keeps a lease past its
duration, a killed writer's lease expires, a writer cut off from the store is fenced, a store
that ignores conditional writes is refused, and the strategy chosen per data root. The same
lease against the real S3Proxy: lakehouse_assets_tests/scaleout/test_table_lease_s3.py."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from lakehouse_assets.lib.engine.locking.conditional_put import ConditionalWritesUnsupported
from lakehouse_assets.lib.engine.locking.lease_decision import LeaseRecord, Sighting, Take, Wait, next_step, still_held
from lakehouse_assets.lib.engine.locking.table_lease import TableLease
from lakehouse_assets.lib.engine.locking.writer_lock import (
    LocalFileLock,
    ObjectStoreLease,
    PoolsOnly,
    Refusal,
    writer_lock,
)
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current

pytestmark = pytest.mark.unit
FOLDER = "s3a://bucket/lake/checkpoints/.locks/orders"


class MemoryStore:
    """Objects in a dict; ``create`` is atomic (a lock), or ignores the condition like a store
    that does not implement ``If-None-Match``. A listing takes a few milliseconds, as over a
    network, so writers that start together decide on the same listing."""

    def __init__(self, honours_conditions: bool = True) -> None:
        self.name = f"memory://{uuid.uuid4().hex}"
        self.objects: dict[str, bytes] = {}
        self.honours_conditions = honours_conditions
        self._lock = threading.Lock()

    def create(self, key: str, body: bytes) -> bool:
        with self._lock:
            if key in self.objects and self.honours_conditions:
                return False
            self.objects[key] = body
            return True

    def write(self, key: str, body: bytes) -> None:
        with self._lock:
            self.objects[key] = body

    def read(self, key: str) -> bytes | None:
        with self._lock:
            return self.objects.get(key)

    def names(self, folder: str) -> list[str]:
        time.sleep(0.005)
        with self._lock:
            return [k.removeprefix(f"{folder}/") for k in self.objects if k.rpartition("/")[0] == folder]

    def delete(self, key: str) -> None:
        with self._lock:
            self.objects.pop(key, None)


class CutOff(MemoryStore):
    """A writer's view of ``store`` once the network to it failed for writes (renewals fail)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store, self.name, self.cut = store, store.name, False

    def create(self, key: str, body: bytes) -> bool:
        return self.store.create(key, body)

    def write(self, key: str, body: bytes) -> None:
        if self.cut:
            raise OSError("connection refused")
        self.store.write(key, body)

    def read(self, key: str) -> bytes | None:
        return self.store.read(key)

    def names(self, folder: str) -> list[str]:
        return self.store.names(folder)

    def delete(self, key: str) -> None:
        self.store.delete(key)


class LostAnswer(MemoryStore):
    """A store whose first answer to a create is lost: the object is created, the writer sees
    an error (a connection cut after the request)."""

    def __init__(self) -> None:
        super().__init__()
        self.lost = 0

    def create(self, key: str, body: bytes) -> bool:
        created = super().create(key, body)
        if self.lost == 0:
            self.lost += 1
            raise OSError("connection reset by peer")
        return created


def lease(store, writer: str, ttl_s: float = 0.6, wait_s: float = 10.0) -> TableLease:
    env = {"LAKEHOUSE_TABLE_LEASE_SECONDS": str(ttl_s), "LAKEHOUSE_TABLE_LEASE_WAIT_SECONDS": str(wait_s)}
    return TableLease(store, FOLDER, "orders", current(env), writer)


def record(generation: int = 3, renewals: int = 0, released: bool = False) -> LeaseRecord:
    return LeaseRecord(generation, "t", "run a", "host", 1, "2026-11-27T18:00:00Z", 10.0, renewals, released)


def test_decisions_take_a_free_lease_wait_for_a_held_one_and_take_it_once_unrenewed_for_its_duration() -> None:
    assert next_step(None, None, 5.0) == Take(1)
    assert next_step(record(released=True), None, 5.0) == Take(4)
    first = next_step(record(), None, 5.0)
    assert first == Wait(record(), Sighting(3, "t", 0, 5.0))  # the clock starts at the first sighting
    assert isinstance(first, Wait) and next_step(record(), first.sighting, 14.9) == Wait(record(), first.sighting)
    assert next_step(record(), first.sighting, 15.0) == Take(4, expired=record())
    renewed = next_step(record(renewals=1), first.sighting, 15.0)  # renewed: the clock starts again
    assert renewed == Wait(record(renewals=1), Sighting(3, "t", 1, 15.0))
    assert still_held(record(), 3, "t") and not still_held(record(4), 3, "t")
    assert (
        not still_held(record(released=True), 3, "t")
        and not still_held(record(), 3, "other")
        and not still_held(None, 3, "t")
    )


def test_a_second_writer_waits_names_the_holder_and_takes_the_lease_when_it_is_released() -> None:
    store = MemoryStore()
    held, release = threading.Event(), threading.Event()
    timeline: list[str] = []

    def first() -> None:
        with lease(store, "run first").held():
            timeline.append("first in")
            held.set()
            release.wait(10)
            timeline.append("first out")

    waits: list[tuple[float | None, str | None]] = []
    one = threading.Thread(target=first)
    one.start()
    assert held.wait(10)
    two = threading.Thread(target=lambda: _hold(lease(store, "run second"), timeline, waits))
    two.start()
    time.sleep(0.5)
    assert timeline == ["first in"] and len(waits) == 1 and waits[0][0] is None
    assert waits[0][1] is not None and waits[0][1].startswith("run first on ")
    release.set()
    one.join(10)
    two.join(10)
    assert timeline == ["first in", "first out", "second in"]
    assert len(waits) == 2 and waits[1][0] is not None and waits[1][0] >= 0.4
    names = sorted(store.names(FOLDER))
    assert names == ["000000000001.lease", "000000000002.lease"], names


def _hold(table_lease: TableLease, timeline: list[str], waits: list) -> None:
    with table_lease.held(lambda seconds=None, holder=None: waits.append((seconds, holder))):
        timeline.append("second in")


def test_writers_racing_for_a_lease_hold_it_one_at_a_time() -> None:
    store = MemoryStore()
    inside, most, start = [0], [0], threading.Barrier(4)
    guard = threading.Lock()

    def writer(number: int) -> None:
        start.wait(10)
        for _ in range(3):
            with lease(store, f"run {number}").held():
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.02)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert most[0] == 1
    # 12 leases taken one after the other; only the newest two generations are kept
    assert sorted(store.names(FOLDER)) == ["000000000011.lease", "000000000012.lease"]


def test_renewal_keeps_a_lease_past_its_duration_and_a_waiting_writer_gives_up_naming_the_holder() -> None:
    store = MemoryStore()
    with lease(store, "run long", ttl_s=0.3).held():
        started = time.monotonic()
        # it waits 1 s, over three lease durations
        with pytest.raises(LakehouseError) as refused, lease(store, "run late", ttl_s=0.3, wait_s=1.0).held():
            pytest.fail("took a lease its holder renews")
        assert time.monotonic() - started >= 1.0
    message = str(refused.value)
    assert message.startswith("orders: gave up after waiting") and "LAKEHOUSE_TABLE_LEASE_WAIT_SECONDS" in message
    assert "run long on " in message and message.count(". ") == 0  # one sentence


def test_a_killed_writers_lease_expires_after_its_duration() -> None:
    store = MemoryStore()
    killed = LeaseRecord(1, "dead", "run killed", "host-9", 4242, "2026-11-27T18:00:00Z", 0.5)
    store.write(f"{FOLDER}/000000000001.lease", killed.to_bytes())  # taken, never renewed nor released
    waits: list[tuple[float | None, str | None]] = []
    started = time.monotonic()
    with lease(store, "run next").held(lambda seconds=None, holder=None: waits.append((seconds, holder))) as fence:
        took = time.monotonic() - started
        assert fence.generation == 2
    assert 0.5 <= took < 3, took
    assert waits[0] == (None, "run killed on host-9 (pid 4242) since 2026-11-27T18:00:00Z")


def test_a_writer_cut_off_from_the_store_loses_its_lease_and_is_fenced() -> None:
    store = MemoryStore()
    cut_off = CutOff(store)
    with lease(cut_off, "run stalled", ttl_s=0.3).held() as stalled:
        stalled.check()  # still the holder
        cut_off.cut = True  # its renewals fail from now on
        with lease(store, "run next", ttl_s=0.3).held() as taken:
            assert taken.generation == stalled.generation + 1
            with pytest.raises(LakehouseError) as fenced:
                stalled.check()
            taken.check()
    assert str(fenced.value).startswith("orders: this run no longer holds the table's lease (now held by run next on ")
    assert "its micro-batch was not written" in str(fenced.value)


def test_a_writer_deciding_on_an_old_listing_stays_out_when_a_newer_generation_exists() -> None:
    """It slept between listing and creating through generations whose old objects were
    forgotten: it can create a forgotten generation, but the newest one is the lease."""
    store = MemoryStore()
    store.write(f"{FOLDER}/000000000002.lease", record(2, released=True).to_bytes())
    current_holder = LeaseRecord(5, "live", "run current", "host-1", 7, "2026-11-27T18:00:00Z", 60.0)
    store.write(f"{FOLDER}/000000000005.lease", current_holder.to_bytes())
    listings = [["000000000002.lease"]]  # what it saw before it slept
    fresh = store.names
    store.names = lambda folder: listings.pop() if listings else fresh(folder)  # type: ignore[method-assign]
    with pytest.raises(LakehouseError, match="run current on host-1"), lease(store, "run asleep", wait_s=0.3).held():
        pytest.fail("held a lease while a newer generation is held")
    assert LeaseRecord.from_bytes(3, store.objects[f"{FOLDER}/000000000003.lease"], 1.0).released


def test_a_writer_whose_create_lost_its_answer_recognises_its_own_lease() -> None:
    store = LostAnswer()
    waits: list[tuple[float | None, str | None]] = []
    with lease(store, "run one").held(lambda seconds=None, holder=None: waits.append((seconds, holder))) as fence:
        assert fence.generation == 1 and store.lost == 1
        fence.check()
    assert waits == []  # it did not wait for itself


def test_a_store_that_ignores_conditional_writes_is_refused_in_one_sentence() -> None:
    store = MemoryStore(honours_conditions=False)
    with pytest.raises(ConditionalWritesUnsupported) as refused, lease(store, "run one").held():
        pytest.fail("wrote where no lease can keep writers apart")
    assert "ignored a conditional write" in str(refused.value) and "LAKEHOUSE_TABLE_LEASE=0" in str(refused.value)
    (only,) = store.objects.values()
    assert LeaseRecord.from_bytes(1, only, 1.0).released  # nobody waits for a refused writer


def test_each_data_root_gets_its_way_of_keeping_writers_apart(tmp_path) -> None:
    assert isinstance(writer_lock(LakehousePaths(str(tmp_path)), current({})), LocalFileLock)
    bucket = LakehousePaths("s3a://bucket/lake")
    assert isinstance(writer_lock(bucket, current({})), ObjectStoreLease)
    assert isinstance(writer_lock(bucket, current({"LAKEHOUSE_TABLE_LEASE": "0"})), PoolsOnly)
    other = writer_lock(LakehousePaths("gs://bucket/lake"), current({}))
    assert isinstance(other, Refusal)
    refusal = r"^orders: LAKEHOUSE_ROOT=gs://bucket/lake is on gs://, where"
    with pytest.raises(LakehouseError, match=refusal), other.hold("orders"):
        pytest.fail("wrote without a way to keep writers apart")
