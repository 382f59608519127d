"""The events landing sensor over a folder in a bucket (S3Proxy 4.1.0, Spark-free): a tick lists
only the names after its cursor's mark (``ListObjectsV2`` with ``start-after``), requests each
new file exactly once, and a name landed before the mark is requested by the next whole listing,
after which the folder is listed whole. The listing's pages against the server's own answer.
The same logic in more cases, server-free: lakehouse_assets_tests/unit/test_landing_mark_objects.py."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace

import dagster as dg
import pytest

from devstack.s3server import S3Server
from lakehouse_assets.definitions import TABLES, build_definitions
from lakehouse_assets.lib.engine.intake import entries, late_files
from lakehouse_assets.lib.engine.intake.late_files import LateFiles
from lakehouse_assets.lib.engine.state import s3_api, storage
from lakehouse_assets.lib.orchestrate import landing
from lakehouse_assets.lib.orchestrate.jobs import landing_sources
from lakehouse_assets.lib.orchestrate.landing import LandingCursor
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
from lakehouse_assets.lib.orchestrate.sensors import SensorSettings, build_landing_sensor
from lakehouse_assets.lib.settings import current


class BucketSensor:
    """The events sensor over ``landing/events`` in the bucket, its cursor carried between ticks."""

    def __init__(self, s3: S3Server, root: str) -> None:
        self.root, self.folder = s3.root(root), f"{s3.root(root)}/landing/events"
        job = next(j for j in build_definitions().jobs or [] if j.name == "ingest_events")
        settings = SensorSettings(interval_s=5, settle_s=0, grace_s=600, watch_s=0)
        self.sensor = build_landing_sensor("events", landing_sources(TABLES)["events"], job, settings)
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursor: str | None = None

    def land(self, name: str) -> None:
        storage.write_text(f"{self.folder}/{name}", json.dumps({"event_id": str(uuid.uuid4())}) + "\n")

    def tick(self) -> tuple[int, set[str]]:
        """How many new files the tick's run request is for (0: it requested none), and their
        names (every file here lands within the cursor's grace, so the cursor names them all)."""
        before = set(LandingCursor.load(self.cursor).recent)
        context = dg.build_sensor_context(
            instance=self.instance, cursor=self.cursor, resources={"lakehouse": LakehouseResource(root=self.root)}
        )
        result = self.sensor(context)
        self.cursor = context.cursor
        if not isinstance(result, dg.RunRequest):
            assert isinstance(result, dg.SkipReason), result
            return 0, set()
        return int(result.tags["lakehouse/new_files"]), set(LandingCursor.load(self.cursor).recent) - before

    def age_whole_listing(self) -> None:
        """Make the cursor's last whole listing older than FULL_LISTING_S: the next tick lists whole."""
        cursor = LandingCursor.load(self.cursor)
        self.cursor = replace(cursor, full_at=0).dump()


@pytest.fixture
def whole_listings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The folders listed whole (every name, a request per 1,000)."""
    listed: list[str] = []
    real = entries.list_objects

    def counted(prefix: str, globs):  # type: ignore[no-untyped-def]
        listed.append(prefix)
        return real(prefix, globs)

    monkeypatch.setattr(entries, "list_objects", counted)
    monkeypatch.setattr(landing, "FROM_MARK_MIN_FILES", 1)  # a page of 1,000 files: too slow to make here
    yield listed


def test_a_tick_lists_only_the_names_after_its_mark_and_requests_each_file_once(
    s3: S3Server, whole_listings: list[str]
) -> None:
    sensor = BucketSensor(s3, "sensor-ordered")
    first = [f"ev-{i:04d}.jsonl" for i in range(1, 31)]
    for name in first:
        sensor.land(name)
    assert sensor.tick() == (30, set(first))
    assert whole_listings == [sensor.folder]  # the first tick has no mark yet
    assert sensor.tick() == (0, set())
    sensor.land("ev-0031.jsonl")
    sensor.land("ev-0032.jsonl")
    assert sensor.tick() == (2, {"ev-0031.jsonl", "ev-0032.jsonl"})
    assert sensor.tick() == (0, set())
    assert whole_listings == [sensor.folder]  # every later tick asked for the names after the mark
    cursor = LandingCursor.load(sensor.cursor)
    assert (cursor.mark, cursor.n, cursor.below_changed_at) == ("ev-0032.jsonl", 32, 0)


def test_a_name_landed_before_the_mark_is_requested_by_the_next_whole_listing(
    s3: S3Server, whole_listings: list[str]
) -> None:
    sensor = BucketSensor(s3, "sensor-unordered")
    for i in range(1, 6):
        sensor.land(f"a-{i:04d}.jsonl")
    assert sensor.tick()[0] == 5
    sensor.land("a-0003x.jsonl")  # sorts before the mark, a-0005.jsonl
    assert sensor.tick() == (0, set())  # a listing after the mark cannot see it
    sensor.age_whole_listing()
    assert sensor.tick() == (1, {"a-0003x.jsonl"})
    assert LandingCursor.load(sensor.cursor).below_changed_at > 0
    assert len(whole_listings) == 2
    sensor.land("a-0002y.jsonl")  # before the mark again: the folder is now listed whole at once
    assert sensor.tick() == (1, {"a-0002y.jsonl"})
    assert len(whole_listings) == 3


def test_a_listing_after_a_name_pages_through_what_the_server_holds_after_it(s3: S3Server) -> None:
    folder = f"{s3.root('listing')}/landing/events"
    names = [f"n-{i}.jsonl" for i in range(1, 8)]
    for name in [*names, "_n-9.jsonl.tmp", "sub/n-0.jsonl"]:
        storage.write_text(f"{folder}/{name}", "{}\n")
    whole = {i.base_name: i for i in storage.list_entries(folder)}
    listed = s3_api.list_after(current(), s3.bucket, "listing/landing/events", "n-3.jsonl", page_size=2)
    expected = sorted(n for n in [*names, "_n-9.jsonl.tmp", "sub"] if n > "n-3.jsonl")
    assert [o.name for o in listed] == expected
    assert [o.name for o in listed if o.folder] == ["sub"]
    for found in (o for o in listed if not o.folder):  # the times a whole listing gives, to the ns
        assert (found.modified_ns, found.size) == (whole[found.name].mtime_ns, whole[found.name].size)
    kinds = {e.name: e.kind for e in entries.list_objects_after(folder, ["*.jsonl"], "^") or []}  # "^" < "_"
    assert kinds == {"_n-9.jsonl.tmp": "in_progress", "sub": "folder"} | dict.fromkeys(names, "file")


def test_freshness_listings_of_a_bucket_folder_start_after_their_mark(
    s3: S3Server, whole_listings: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(late_files, "FROM_MARK_MIN_FILES", 1)
    folder = f"{s3.root('freshness')}/landing/events"
    for i in range(3):
        storage.write_text(f"{folder}/ev-{i}.jsonl", "{}\n")
    late = LateFiles()
    first = {e.name: e.arrived_ns for e in late.files(folder, ("*.jsonl",), -1)}
    assert set(first) == {"ev-0.jsonl", "ev-1.jsonl", "ev-2.jsonl"}
    since = max(first.values())
    time.sleep(1.1)  # S3Proxy's Last-Modified is to the second
    storage.write_text(f"{folder}/ev-3.jsonl", "{}\n")
    truth = {i.base_name: i.mtime_ns for i in storage.list_entries(folder) if i.mtime_ns > since}
    assert {e.name: e.arrived_ns for e in late.files(folder, ("*.jsonl",), since)} == truth
    assert "ev-3.jsonl" in truth and whole_listings == [folder]  # the second asked after the mark
