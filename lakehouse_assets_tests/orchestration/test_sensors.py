"""Landing sensor ticks evaluated directly over a sequence of landings and renames (no Spark)."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.definitions import TABLES, build_definitions
from lakehouse_assets.lib.engine.reading.landing_names import expand_braces
from lakehouse_assets.lib.orchestrate.code_location import AUTOMATION_SENSOR
from lakehouse_assets.lib.orchestrate.freshness_sensor import SENSOR_NAME as FRESHNESS_SENSOR
from lakehouse_assets.lib.orchestrate.jobs import SOURCE_TAG, kafka_subscriptions, landing_sources
from lakehouse_assets.lib.orchestrate.kafka_sensor import kafka_sensor_name
from lakehouse_assets.lib.orchestrate.landing import LandingCursor
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
from lakehouse_assets.lib.orchestrate.sensors import SensorSettings, build_landing_sensor, sensor_name
from lakehouse_assets.lib.orchestrate.stranded import RETRY_OF_TAG

pytestmark = pytest.mark.unit

defs = build_definitions()
JOBS, SENSORS, SCHEDULES = list(defs.jobs or []), list(defs.sensors or []), list(defs.schedules or [])


def _origin():
    """A job origin: Dagster requires one on queued runs."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    location = InProcessCodeLocationOrigin(LoadableTargetOrigin(module_name="lakehouse_assets.definitions"))
    return RemoteJobOrigin(RemoteRepositoryOrigin(location, "__repository__"), "ingest_events")


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


class Harness:
    """One events sensor over a temporary data root, with the cursor carried between ticks."""

    def __init__(self, root: Path, settings: SensorSettings):
        self.root = root
        self.folder = root / "landing" / "events"
        self.folder.mkdir(parents=True)
        self.instance = dg.DagsterInstance.ephemeral()
        self.clock = Clock()
        self.slept: list[float] = []
        self.during_sleep: Callable[[], None] | None = None
        readers = landing_sources(TABLES)["events"]
        self.sensor = build_landing_sensor(
            "events",
            readers,
            next(j for j in JOBS if j.name == "ingest_events"),
            settings,
            clock=self.clock,
            sleep=self.sleep,
        )
        self.cursor: str | None = None
        self.requests: list[dg.RunRequest] = []

    def sleep(self, seconds: float) -> None:
        """A tick's wait for a settling folder, on the harness's clock (no real sleep)."""
        self.slept.append(seconds)
        self.clock.offset += seconds
        if self.during_sleep:
            self.during_sleep()

    def tick(self, cursor: str | None = ..., advance: bool = True):  # type: ignore[assignment]
        context = dg.build_sensor_context(
            instance=self.instance,
            cursor=self.cursor if cursor is ... else cursor,
            resources={"lakehouse": LakehouseResource(root=str(self.root))},
        )
        result = self.sensor(context)
        if advance:
            self.cursor = context.cursor
        if isinstance(result, dg.RunRequest):
            self.requests.append(result)
        return result

    def land(self, name: str, lines: int = 1, mtime: float | None = None) -> Path:
        """Write under an in-progress name, then rename into place (the contract's protocol)."""
        temp = self.folder / f"_{name}.tmp"
        temp.write_text("".join(json.dumps({"event_id": str(uuid.uuid4())}) + "\n" for _ in range(lines)))
        if mtime is not None:
            os.utime(temp, (mtime, mtime))
        final = self.folder / name
        os.replace(temp, final)
        return final

    def start_run(self, status: dg.DagsterRunStatus) -> str:
        run_id = str(uuid.uuid4())
        self.instance.add_run(
            dg.DagsterRun(
                job_name="ingest_events",
                run_id=run_id,
                status=status,
                tags={SOURCE_TAG: "events"},
                remote_job_origin=_origin() if status == dg.DagsterRunStatus.QUEUED else None,
            )
        )
        return run_id

    def materialized_by(self, run_id: str, table: str) -> None:
        """Record ``table``'s materialization by run ``run_id``, as its step does."""
        from dagster._core.events import DagsterEvent, DagsterEventType, StepMaterializationData

        event = DagsterEvent(
            DagsterEventType.ASSET_MATERIALIZATION.value,
            "ingest_events",
            event_specific_data=StepMaterializationData(dg.AssetMaterialization(table)),
        )
        self.instance.report_dagster_event(event, run_id=run_id)

    def finish_run(self, run_id: str) -> None:
        self.instance.run_storage.delete_run(run_id)
        self.instance.add_run(
            dg.DagsterRun(
                job_name="ingest_events", run_id=run_id, status=dg.DagsterRunStatus.SUCCESS, tags={SOURCE_TAG: "events"}
            )
        )


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "lakehouse", SensorSettings(interval_s=5, settle_s=0, grace_s=600))


def new_files(request: dg.RunRequest) -> int:
    return int(request.tags["lakehouse/new_files"])


def test_definitions_derive_one_sensor_and_job_per_landing_source() -> None:
    sources = landing_sources(TABLES)
    kafka = {kafka_sensor_name(s) for s in kafka_subscriptions(TABLES)}
    # The gold tables declare caught_up_with_landing: the freshness sensor evaluates it each minute.
    others = {AUTOMATION_SENSOR, FRESHNESS_SENSOR}
    assert {s.name for s in SENSORS} == {sensor_name(source) for source in sources} | kafka | others
    for sensor in SENSORS:
        # A Kafka sensor runs by default only where a broker was configured when defs loaded.
        assert sensor.default_status == dg.DefaultSensorStatus.RUNNING or sensor.name in kafka
        assert sensor.minimum_interval_seconds <= (60 if sensor.name == FRESHNESS_SENSOR else 10)
    written = [t for t in TABLES if t.writes_delta]
    assert {j.name for j in JOBS} >= {f"ingest_{s}" for s in sources} | {f"maintain_{t.name}" for t in written}
    for source, readers in sources.items():
        job = defs.resolve_job_def(f"ingest_{source}")
        keys = {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
        assert {t.name for t in readers} <= keys
        # every table that streams from one in the job is refreshed too, up to gold; a table
        # that only looks one up is not (a broken lookup feed must not stop it)
        streamers = {
            t.name for t in TABLES if {i.table for i in t.streaming_inputs.values() if hasattr(i, "table")} & keys
        }
        assert streamers <= keys
        lookups_only = {t.name for t in TABLES if set(t.lookup_tables) & keys and t.name not in streamers}
        assert not lookups_only & keys
    if "events" in sources:
        assert "gold_hourly_revenue" in {
            k.to_user_string() for k in defs.resolve_job_def("ingest_events").asset_layer.executable_asset_keys
        }
    schedules = {s.name: s for s in SCHEDULES}
    assert schedules["refresh_all_schedule"].default_status == dg.DefaultScheduleStatus.STOPPED
    for table in written:
        schedule = schedules[f"maintain_{table.name}_nightly"]
        assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING


def test_empty_and_in_progress_names_request_nothing(harness: Harness) -> None:
    assert isinstance(harness.tick(), dg.SkipReason)
    (harness.folder / "_part-0001.jsonl.tmp").write_text('{"event_id": "x"}\n')
    (harness.folder / ".hidden.jsonl").write_text('{"event_id": "y"}\n')
    (harness.folder / "README.txt").write_text("not an events file\n")
    result = harness.tick()
    assert isinstance(result, dg.SkipReason)
    assert "2 in-progress name(s) ignored" in result.skip_message
    assert harness.requests == []


def test_each_file_triggers_exactly_once(harness: Harness) -> None:
    harness.land("a.jsonl")
    first = harness.tick()
    assert isinstance(first, dg.RunRequest) and new_files(first) == 1
    assert first.tags[SOURCE_TAG] == "events"
    assert isinstance(harness.tick(), dg.SkipReason)  # seen: never again
    harness.land("b.jsonl.gz")
    second = harness.tick()
    assert isinstance(second, dg.RunRequest) and new_files(second) == 1
    assert second.run_key != first.run_key
    assert isinstance(harness.tick(), dg.SkipReason)


def test_a_replayed_tick_repeats_its_run_key(harness: Harness) -> None:
    """If a tick's cursor update were lost, the retried tick asks for the same run_key, which
    Dagster launches only once."""
    harness.land("a.jsonl")
    before = harness.cursor
    first = harness.tick()
    replay = harness.tick(cursor=before, advance=False)
    assert isinstance(first, dg.RunRequest) and isinstance(replay, dg.RunRequest)
    assert replay.run_key == first.run_key


def test_file_renamed_into_place_with_an_old_mtime_is_not_missed(harness: Harness) -> None:
    harness.land("a.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)
    harness.land("b.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)
    # produced long ago (mv/cp -p keep the mtime), renamed into place now
    old = time.time() - 30 * 24 * 3600
    late = harness.land("late-from-2020.jsonl", mtime=old)
    assert late.stat().st_mtime < time.time() - 24 * 3600
    result = harness.tick()
    assert isinstance(result, dg.RunRequest), result
    assert result.tags["lakehouse/first_new_file"] == "late-from-2020.jsonl"
    assert isinstance(harness.tick(), dg.SkipReason)


def test_files_landing_while_a_run_is_queued_or_going_wait_for_it(harness: Harness) -> None:
    harness.land("a.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)
    run_id = harness.start_run(dg.DagsterRunStatus.QUEUED)
    harness.land("b.jsonl")
    harness.land("c.jsonl")
    waiting = harness.tick()
    assert isinstance(waiting, dg.SkipReason)
    assert "2 new file(s) waiting" in waiting.skip_message and "QUEUED" in waiting.skip_message
    harness.instance.run_storage.delete_run(run_id)
    run_id = harness.start_run(dg.DagsterRunStatus.STARTED)
    harness.land("d.jsonl")
    waiting = harness.tick()
    assert isinstance(waiting, dg.SkipReason) and "3 new file(s)" in waiting.skip_message
    harness.finish_run(run_id)
    # the run ended: one run for everything that landed meanwhile
    result = harness.tick()
    assert isinstance(result, dg.RunRequest) and new_files(result) == 3
    assert isinstance(harness.tick(), dg.SkipReason)
    assert len(harness.requests) == 2


def test_a_file_landing_after_the_going_run_read_the_folder_starts_the_next_run_at_once(harness: Harness) -> None:
    harness.land("a.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)
    run_id = harness.start_run(dg.DagsterRunStatus.STARTED)
    harness.land("b.jsonl")
    # bronze_events of an earlier run does not count: this run has yet to read the folder.
    harness.materialized_by(str(uuid.uuid4()), "bronze_events")
    assert isinstance(harness.tick(), dg.SkipReason)
    harness.materialized_by(run_id, "bronze_events")  # its query is over; it goes on with silver, gold
    result = harness.tick()
    assert isinstance(result, dg.RunRequest) and new_files(result) == 1
    assert result.tags["lakehouse/first_new_file"] == "b.jsonl"
    assert isinstance(harness.tick(), dg.SkipReason)  # each file once
    assert len(harness.requests) == 2


def test_a_burst_gives_one_run(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "lakehouse", SensorSettings(settle_s=2, max_settle_s=60))
    for i in range(5):
        harness.land(f"burst-{i}.jsonl")
    settling = harness.tick()
    assert isinstance(settling, dg.SkipReason) and "settle" in settling.skip_message
    harness.clock.offset = 3  # quiet for 3 s
    result = harness.tick()
    assert isinstance(result, dg.RunRequest) and new_files(result) == 5
    assert isinstance(harness.tick(), dg.SkipReason)


def test_a_file_that_settles_within_the_tick_is_run_without_waiting_for_the_next_pass(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "lakehouse", SensorSettings(settle_s=1.0, settle_wait_s=1.0))
    harness.land("just-landed.jsonl")
    result = harness.tick()
    assert isinstance(result, dg.RunRequest) and new_files(result) == 1
    assert len(harness.slept) == 1 and 0 < harness.slept[0] <= 1.0


def test_a_burst_still_landing_after_the_ticks_wait_is_left_to_the_next_pass(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "lakehouse", SensorSettings(settle_s=1.0, settle_wait_s=1.0))
    harness.land("first.jsonl")

    def another_lands() -> None:
        harness.land("second.jsonl")
        harness.clock.offset = 0.0  # it landed just now

    harness.during_sleep = another_lands
    settling = harness.tick()
    assert isinstance(settling, dg.SkipReason) and "2 new file(s)" in settling.skip_message
    assert len(harness.slept) == 1  # one wait per tick at most
    harness.during_sleep = None
    harness.clock.offset = 2.0
    result = harness.tick()
    assert isinstance(result, dg.RunRequest) and new_files(result) == 2


def test_a_file_landing_while_a_tick_watches_is_requested_by_that_tick(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "lakehouse", SensorSettings(settle_s=0, watch_s=1.0))
    harness.land("old.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)
    harness.slept.clear()
    polls: list[int] = []

    def lands_on_the_third_look() -> None:
        polls.append(1)
        if len(polls) == 3:
            harness.land("new.jsonl")

    harness.during_sleep = lands_on_the_third_look
    result = harness.tick()
    assert isinstance(result, dg.RunRequest) and new_files(result) == 1
    assert result.tags["lakehouse/first_new_file"] == "new.jsonl"
    assert harness.slept == [0.25, 0.25, 0.25]  # found on the look after it landed


def test_a_watching_tick_ends_within_its_watch_and_waits_for_a_going_run(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "lakehouse", SensorSettings(settle_s=0, watch_s=1.0))
    assert isinstance(harness.tick(), dg.SkipReason)
    assert 0 < len(harness.slept) <= 4 and sum(harness.slept) <= 1.0
    run = harness.start_run(dg.DagsterRunStatus.STARTED)
    harness.land("behind-the-run.jsonl")
    harness.slept.clear()
    waiting = harness.tick()  # the run does not end within the watch: the file waits for it
    assert isinstance(waiting, dg.SkipReason) and "1 new file(s) waiting: run" in waiting.skip_message
    assert 0 < len(harness.slept) <= 4 and sum(harness.slept) <= 1.0
    harness.slept.clear()
    harness.during_sleep = lambda: harness.finish_run(run) if len(harness.slept) == 2 else None
    result = harness.tick()  # the run ends while the tick watches: the file is requested then
    assert isinstance(result, dg.RunRequest) and new_files(result) == 1
    assert harness.slept == [0.25, 0.25]


def test_watch_and_settle_wait_end_before_the_daemons_next_pass(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "lakehouse", SensorSettings(settle_s=1.0, settle_wait_s=1.0, watch_s=10.0))
    assert isinstance(harness.tick(), dg.SkipReason)
    assert 2.5 < sum(harness.slept) <= 3.0  # the 4 s budget less the 1 s a settle wait may take


def test_a_steady_trickle_is_not_starved_by_settling(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "lakehouse", SensorSettings(settle_s=100, max_settle_s=60))
    harness.land("first.jsonl")
    harness.land("newest.jsonl")
    assert isinstance(harness.tick(), dg.SkipReason)  # still settling
    harness.clock.offset = 61  # files keep coming, but the oldest has waited max_settle_s
    result = harness.tick()
    assert isinstance(result, dg.RunRequest) and new_files(result) == 2


def test_cursor_stays_bounded(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "lakehouse", SensorSettings(settle_s=0, grace_s=0.05))
    for i in range(40):
        harness.land(f"f{i:03d}.jsonl")
        if i % 10 == 9:
            time.sleep(0.1)
            assert isinstance(harness.tick(), dg.RunRequest)
    cursor = LandingCursor.load(harness.cursor)
    assert cursor.n == 40
    assert len(cursor.recent) <= 10  # only names within the grace window of the newest arrival
    assert isinstance(harness.tick(), dg.SkipReason)
    harness.land("after.jsonl")
    result = harness.tick()
    assert isinstance(result, dg.RunRequest) and new_files(result) == 1


def test_file_arriving_before_the_cursor_window_still_triggers(harness: Harness) -> None:
    """Safety net: a file the window cannot name (e.g. the clock was set back) is counted."""
    harness.land("a.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)
    cursor = LandingCursor.load(harness.cursor)
    future = int((time.time() + 3600) * 1e9)
    harness.cursor = LandingCursor(hwm=future, recent={}, n=cursor.n).dump()
    harness.land("b.jsonl")
    result = harness.tick()
    assert isinstance(result, dg.RunRequest)
    assert isinstance(harness.tick(), dg.SkipReason)


def test_deleted_files_do_not_trigger(harness: Harness) -> None:
    a = harness.land("a.jsonl")
    harness.land("b.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)
    a.unlink()
    assert isinstance(harness.tick(), dg.SkipReason)
    harness.land("c.jsonl")
    result = harness.tick()
    assert isinstance(result, dg.RunRequest) and new_files(result) == 1


def test_entries_nothing_reads_are_named_in_the_tick_and_warned_about_once(
    harness: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    (harness.folder / "x.jsonl").mkdir()
    (harness.folder / "x.jsonl" / "inside.jsonl").write_text("{}\n")
    (harness.folder / "notes.txt").write_text("not data\n")
    first, second = harness.tick(), harness.tick()
    for tick in (first, second):
        assert isinstance(tick, dg.SkipReason)
        assert "x.jsonl/" in tick.skip_message and "notes.txt" in tick.skip_message, tick.skip_message
    warned = [line for line in capsys.readouterr().err.splitlines() if "will not be ingested" in line]
    assert len(warned) == 1 and "WARNING" in warned[0] and "x.jsonl/" in warned[0], warned
    harness.land("real.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)  # the folder does not hold up real files


def test_brace_globs() -> None:
    assert expand_braces("*.{json,jsonl,json.gz}") == ["*.json", "*.jsonl", "*.json.gz"]
    assert expand_braces("*.csv") == ["*.csv"]


def test_a_run_that_failed_is_followed_by_another_without_a_new_file_with_back_off(harness: Harness) -> None:
    harness.land("a.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)
    failed = harness.start_run(dg.DagsterRunStatus.FAILURE)
    # Nothing new landed, but what the failed run did not drain is still to do: after the back-off.
    waiting = harness.tick()
    assert isinstance(waiting, dg.SkipReason) and "ended FAILURE" in waiting.skip_message
    harness.clock.offset += 11
    retry = harness.tick()
    assert isinstance(retry, dg.RunRequest) and retry.tags[RETRY_OF_TAG] == failed
    assert retry.run_key == f"retry-of-{failed}" and retry.tags[SOURCE_TAG] == "events"
    # The retry failed too: the next one waits twice as long.
    again = harness.start_run(dg.DagsterRunStatus.CANCELED)  # ended 11 s before the harness's clock
    assert isinstance(harness.tick(), dg.SkipReason)
    harness.clock.offset += 10
    retry = harness.tick()
    assert isinstance(retry, dg.RunRequest) and retry.tags[RETRY_OF_TAG] == again
    # A run in flight, or a newest run that succeeded, asks for nothing more.
    harness.finish_run(harness.start_run(dg.DagsterRunStatus.STARTED))
    assert isinstance(harness.tick(), dg.SkipReason)
    assert len(harness.requests) == 3


def test_a_failed_run_newer_than_a_successful_reexecution_of_an_older_one_is_retried(harness: Harness) -> None:
    """Runs overlap: B started once A had read the folder, then A's process died and Dagster's
    re-execution A' (newer than B) re-ran A's failed steps only. B's failure is still to make good."""
    harness.land("a.jsonl")
    assert isinstance(harness.tick(), dg.RunRequest)
    harness.start_run(dg.DagsterRunStatus.FAILURE)  # A
    b = harness.start_run(dg.DagsterRunStatus.FAILURE)
    reexecution = str(uuid.uuid4())
    harness.instance.add_run(
        dg.DagsterRun(
            job_name="ingest_events", run_id=reexecution, status=dg.DagsterRunStatus.SUCCESS,
            tags={SOURCE_TAG: "events", "dagster/parent_run_id": "a", "dagster/root_run_id": "a"},
        )
    )  # fmt: skip
    harness.clock.offset += 30
    retry = harness.tick()
    assert isinstance(retry, dg.RunRequest) and retry.tags[RETRY_OF_TAG] == b
    # A full run that succeeds after them makes both good.
    harness.finish_run(harness.start_run(dg.DagsterRunStatus.STARTED))
    assert isinstance(harness.tick(), dg.SkipReason)


def test_a_folder_unchanged_since_a_quiet_listing_is_not_listed_again(harness: Harness, monkeypatch) -> None:
    """A tick costs one stat of the folder, not a listing of every file it holds, while nothing
    lands; a file that lands is seen at the next tick."""
    for i in range(50):
        harness.land(f"old-{i}.json")
    assert isinstance(harness.tick(), dg.RunRequest)
    assert isinstance(harness.tick(), dg.SkipReason)  # lists, finds nothing new, stamps the cursor
    old = time.time() - 10
    os.utime(harness.folder, (old, old))  # the folder's last change is now well before its listing
    listings = []
    from lakehouse_assets.lib.orchestrate import sensors

    monkeypatch.setattr(sensors, "scan", lambda *a, **k: listings.append(a) or _scan(*a, **k))
    assert isinstance(harness.tick(), dg.SkipReason) and len(listings) == 1  # the folder's time moved: lists
    time.sleep(1.1)  # a second quiet listing, a second later, confirms the folder's time
    assert isinstance(harness.tick(), dg.SkipReason) and len(listings) == 2
    skipped = harness.tick()
    assert isinstance(skipped, dg.SkipReason) and len(listings) == 2, "an unchanged folder was listed"
    assert "unchanged since a listing" in skipped.skip_message and "tick " in skipped.skip_message
    harness.land("new.json")
    request = harness.tick()
    assert isinstance(request, dg.RunRequest) and new_files(request) == 1 and len(listings) == 3


def _scan(*args, **kwargs):
    from lakehouse_assets.lib.orchestrate.landing import scan

    return scan(*args, **kwargs)
