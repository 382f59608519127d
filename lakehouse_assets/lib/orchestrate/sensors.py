"""One sensor per landing source: new complete files -> one run of the source's ingest job.

A tick:

1. lists the complete files of ``landing/<source>/`` that the bronze tables read (names
   starting with ``_`` or ``.`` are in progress and ignored) and compares them with the cursor
   (see :mod:`lakehouse_assets.lib.orchestrate.landing`: arrival = rename time, not mtime);
2. skips, saying why, when nothing is new, when a run of the source's job is queued or going
   (that run, or the next one, drains every new file: ``availableNow``), or when the newest
   file arrived less than ``settle`` seconds ago (a burst still landing), so a burst of files
   gives one run, not one per file. A folder that settles within ``settle_wait`` seconds is
   waited for in the tick and listed again, rather than left to the daemon's next pass 5 s later;
   a tick that finds nothing new, or new files behind a run that is going, *watches* the folder
   (and the run) until ``watch`` seconds after it started, listing it every quarter second (every
   second on object storage), so a file that lands, or a run that ends, then is acted on at once
   rather than at the daemon's next pass (the daemon runs ticks in threads: ``dagster.yaml``);
3. otherwise requests one run with a ``run_key`` naming the new files and moves the cursor.

Files that land while a run is going are not in the cursor yet, so the first tick after the
run ends requests the next run. When the source's last run failed or was cancelled and nothing
new landed, the sensor requests a run anyway, with back-off (:mod:`.stranded`). The cursor only moves together with a run request (or when
nothing is new), so no file is ever skipped, and the run key keeps a retried tick from
launching a file twice.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.reading.landing_names import describe_not_ingested
from lakehouse_assets.lib.orchestrate.jobs import SOURCE_TAG, landing_globs
from lakehouse_assets.lib.orchestrate.landing import Evaluation, LandingCursor, digest, evaluate, folder_stamp, scan
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
from lakehouse_assets.lib.orchestrate.stranded import RetryPolicy, retry_request
from lakehouse_assets.lib.settings import current

if TYPE_CHECKING:  # the job type is not exported by name from dagster
    from lakehouse_assets.lib.orchestrate.dagster_internals import UnresolvedAssetJobDefinition

# How often a watching tick lists the folder: a local listing is a directory read; an object
# store's is a request that may be billed.
WATCH_POLL_S = 0.25
WATCH_POLL_OBJECTS_S = 1.0
# A tick's watch and settle wait end within this many seconds of its start, so it is over before
# the daemon's next pass (5 s after this one) and the sensor is not skipped for a pass.
TICK_BUDGET_S = 4.0
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


@dataclass(frozen=True)
class SensorSettings:
    """Sensor timing (``LAKEHOUSE_SENSOR_*``, see :mod:`lakehouse_assets.lib.settings`).

    The daemon evaluates sensors every 5 s at most; a minimum interval of 5 would skip every
    other pass (the last tick started a few milliseconds less than 5 s before), so the default
    of 1 lets each pass tick. A tick that finds the folder settling waits up to ``settle_wait_s``
    for it (a file found just after it landed would otherwise wait for the next pass). A tick
    that finds nothing new, or new files behind a going run, watches the folder and the run
    until ``watch_s`` after it started, cut so that watch and settle wait end within
    :data:`TICK_BUDGET_S` (a tick still going at the daemon's next pass makes it skip the sensor).
    ``watch_s`` is 0 unless given, so a test opts in; :meth:`from_env` reads the setting (3.5 s)."""

    interval_s: int = 1
    settle_s: float = 0.5
    max_settle_s: float = 60.0
    grace_s: float = 600.0
    settle_wait_s: float = 1.0
    watch_s: float = 0.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @classmethod
    def from_env(cls) -> "SensorSettings":
        settings = current()
        return cls(
            interval_s=settings.sensor_interval_s,
            settle_s=settings.sensor_settle_s,
            max_settle_s=settings.sensor_max_settle_s,
            grace_s=settings.sensor_grace_s,
            settle_wait_s=settings.sensor_settle_wait_s,
            watch_s=settings.sensor_watch_s,
            retry=RetryPolicy(first_s=settings.sensor_retry_backoff_s),
        )

    def settling_for(self, new: Sequence, now: float) -> float:
        """Seconds until the folder counts as settled (0: settled, or its oldest new file has
        waited ``max_settle_s``), for new files sorted by arrival."""
        if not new:
            return 0.0
        newest_age, oldest_age = now - new[-1].arrived_ns / 1e9, now - new[0].arrived_ns / 1e9
        if newest_age < self.settle_s and oldest_age < self.max_settle_s:
            return self.settle_s - max(0.0, newest_age)
        return 0.0


def sensor_name(source: str) -> str:
    return f"landing_{source}_sensor"


def in_flight_run(instance: dg.DagsterInstance, tags: dict[str, str]) -> dg.DagsterRun | None:
    """A queued or going run with these tags, if any."""
    runs = instance.get_runs(filters=dg.RunsFilter(tags=tags, statuses=IN_FLIGHT), limit=1)
    return runs[0] if runs else None


def build_landing_sensor(
    source: str,
    tables: Sequence[TableSpec],
    job: "UnresolvedAssetJobDefinition",
    settings: SensorSettings | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> dg.SensorDefinition:
    settings = settings or SensorSettings.from_env()
    globs = landing_globs(tables, source)
    grace_ns = int(settings.grace_s * 1e9)
    # The longest a settle wait may take comes after the watch, within the tick's budget.
    watch_s = min(settings.watch_s, TICK_BUDGET_S - min(settings.settle_s, settings.settle_wait_s))

    def going(instance: dg.DagsterInstance) -> dg.DagsterRun | None:
        return in_flight_run(instance, {SOURCE_TAG: source})

    def watch(
        folder: Path | str, cursor: LandingCursor, started: float, instance: dg.DagsterInstance
    ) -> Evaluation | None:
        """New files, found by listing ``folder`` again until ``watch_s`` after ``started``: as
        soon as no run of the source is queued or going, else when the watch ends (None: nothing
        new by then)."""
        poll = WATCH_POLL_S if isinstance(folder, Path) else WATCH_POLL_OBJECTS_S
        found, last = None, cursor
        for _ in range(int(watch_s / poll)):
            if clock() + poll > started + watch_s:
                break
            sleep(poll)
            if found is None or not last.unchanged(folder_stamp(folder), time.time_ns()):  # list a folder that changed
                listing = scan(folder, globs)
                found, last = evaluate(listing.files, cursor, grace_ns), listing.stamped(cursor)
            if found.has_work and going(instance) is None:
                return found
        return found if found is not None and found.has_work else None

    @dg.sensor(
        name=sensor_name(source),
        job=job,
        minimum_interval_seconds=settings.interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            f"Watches landing/{source}/ (files matching {', '.join(globs)}; names starting with "
            f"'_' or '.' are in progress) and runs {job.name} when complete files arrive. "
            f"Waits while a run for {source} is queued or going; a burst gives one run."
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext, lakehouse: LakehouseResource):
        started = clock()
        paths = lakehouse.paths
        folder = paths.local_path(paths.landing(source)) if paths.is_local else paths.landing(source)
        cursor = LandingCursor.load(context.cursor)
        # A folder whose time has not moved since a listing that found nothing new is not listed:
        # a tick then costs one stat, however many files the folder holds.
        listing = None if cursor.unchanged(folder_stamp(folder), time.time_ns()) else scan(folder, globs)
        not_read, ignored = "", ""
        if listing is not None:
            not_read = describe_not_ingested(str(folder), listing.not_read, globs) if listing.not_read else ""
            ignored = f"{listing.in_progress} in-progress name(s) ignored" if listing.in_progress else ""
            if digest(listing.not_read) != cursor.warned:
                if not_read:
                    context.log.warning(f"{source}: {not_read}")
                cursor = replace(cursor, warned=digest(listing.not_read))
                context.update_cursor(cursor.dump())
        result = evaluate(listing.files, cursor, grace_ns) if listing is not None else Evaluation([], 0, cursor)
        if not result.has_work:
            stamped = listing.stamped(replace(result.next_cursor, warned=cursor.warned)) if listing else cursor
            if stamped != cursor:
                cursor = stamped
                context.update_cursor(cursor.dump())
            if going(context.instance) is None:
                retry = retry_request(context.instance, {SOURCE_TAG: source}, clock(), settings.retry)
                if isinstance(retry, dg.RunRequest):
                    context.log.info(
                        f"{source}: the last run ended badly; requesting {job.name} again to drain what it left"
                    )
                if retry is not None:
                    return retry
            result = watch(folder, cursor, started, context.instance) or result
        if not result.has_work:
            if listing is None:
                seen = "unchanged since a listing that found nothing new"
            else:
                seen = f"{len(listing.files)} complete file(s), all seen" if listing.files else "no complete files yet"
            details = ", ".join(x for x in [seen, ignored, not_read] if x)
            return dg.SkipReason(f"No new files in {folder} ({details}; tick {1000 * (clock() - started):.0f} ms).")

        def described(result: Evaluation) -> str:
            return f"{len(result.new)} new file(s)" + (
                f" and {result.unidentified} arriving before the cursor window" if result.unidentified else ""
            )

        what = described(result)
        run = going(context.instance)
        if run is not None and (later := watch(folder, cursor, started, context.instance)) is not None:
            result, what = later, described(later)
            run = going(context.instance)  # still going when the watch ran out before it ended
        if run is not None:
            return dg.SkipReason(
                f"{what} waiting: run {run.run_id[:8]} of {run.job_name} is {run.status.value}. "
                "It or the next run drains every new file, so the sensor waits for it to finish."
            )
        settling = settings.settling_for(result.new, clock())
        if 0 < settling <= settings.settle_wait_s:
            sleep(settling)
            result = evaluate(scan(folder, globs).files, cursor, grace_ns)
            if not result.has_work:  # the new files went away meanwhile
                return dg.SkipReason(f"No new files in {folder} (the new ones were removed while settling).")
            what = described(result)
            settling = settings.settling_for(result.new, clock())
        if settling > 0:
            newest_age = clock() - result.new[-1].arrived_ns / 1e9
            return dg.SkipReason(
                f"{what} waiting {settings.settle_s:g}s for the landing folder to settle "
                f"(newest arrived {max(0.0, newest_age):.1f}s ago), so a burst gives one run."
            )

        context.update_cursor(result.next_cursor.dump())
        names = [f.name for f in result.new]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        context.log.info(f"{source}: requesting {job.name} for {what}: {shown}")
        return dg.RunRequest(
            run_key=result.run_key(source),
            tags={
                SOURCE_TAG: source,
                "lakehouse/new_files": str(len(names)),
                "lakehouse/first_new_file": names[0] if names else "",
            },
        )

    return _sensor
