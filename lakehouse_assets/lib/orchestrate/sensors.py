"""One sensor per landing source: new complete files -> one run of the source's ingest job.

A tick:

1. lists the complete files of ``landing/<source>/`` that the bronze tables read (names
   starting with ``_`` or ``.`` are in progress and ignored) and compares them with the cursor
   (see :mod:`lakehouse_assets.lib.orchestrate.landing`: arrival = rename time, not mtime);
2. skips, saying why, when nothing is new, when a run of the source's job is queued or going
   and has yet to materialize the tables reading the folder (that run, or the next one, drains
   every new file: ``availableNow``; once it has, a new file is the next run's, which starts at
   once and waits only for each table's own writer, the table pools), or when the newest
   file arrived less than ``settle`` seconds ago (a burst still landing), so a burst of files
   gives one run, not one per file. A folder that settles within ``settle_wait`` seconds is
   waited for in the tick and listed again, rather than left to the daemon's next pass 5 s later;
   a tick that finds nothing new, or new files behind a run that is going, *watches* the folder
   (and the run) until ``watch`` seconds after it started, listing it every quarter second (every
   second on object storage), so a file that lands, or a run that ends, then is acted on at once
   rather than at the daemon's next pass (the daemon runs ticks in threads: ``dagster.yaml``);
3. otherwise requests one run with a ``run_key`` naming the new files and moves the cursor.

Files that land while a run is going are not in the cursor yet, so the first tick after the
run has read the folder requests the next run. When the source's last run failed or was cancelled and nothing
new landed, the sensor requests a run anyway, with back-off (:mod:`.stranded`). The cursor only
moves together with a run request (or when nothing is new), so no file is ever skipped, and the
run key keeps a retried tick from launching a file twice.

What to do at each look is :func:`~.decide.decide`'s answer (pure, unit-tested); this module
gathers its inputs (a listing, the cursor, the source's runs) and acts on it.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.reading.landing_names import describe_not_ingested
from lakehouse_assets.lib.orchestrate.decide import (
    TICK_BUDGET_S,
    WATCH_POLL_OBJECTS_S,
    WATCH_POLL_S,
    Request,
    Retry,
    SensorSettings,
    Settle,
    Skip,
    Tick,
    Watch,
    decide,
)
from lakehouse_assets.lib.orchestrate.jobs import SOURCE_TAG, landing_globs
from lakehouse_assets.lib.orchestrate.landing import LandingCursor, Listing, digest, folder_stamp, scan
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
from lakehouse_assets.lib.orchestrate.stranded import IN_FLIGHT, InstanceRuns, in_flight_run, retry_run_request

if TYPE_CHECKING:  # the job type is not exported by name from dagster
    from lakehouse_assets.lib.orchestrate.dagster_internals import UnresolvedAssetJobDefinition

__all__ = [
    "IN_FLIGHT",
    "TICK_BUDGET_S",
    "WATCH_POLL_OBJECTS_S",
    "WATCH_POLL_S",
    "SensorSettings",
    "build_landing_sensor",
    "in_flight_run",
    "sensor_name",
]


def sensor_name(source: str) -> str:
    return f"landing_{source}_sensor"


class Looker:
    """Looks at one landing folder for a tick, and keeps the time its listings took."""

    def __init__(self, folder: Path | str, globs: Sequence[str]) -> None:
        self.folder, self.globs, self.listed_s = folder, globs, 0.0

    def list(self, cursor: LandingCursor) -> Listing:
        """The folder's entries; those at or before ``cursor``'s name mark not looked at one by one."""
        began = time.perf_counter()
        try:
            return scan(self.folder, self.globs, cursor)
        finally:
            self.listed_s += time.perf_counter() - began

    def look(self, cursor: LandingCursor, previous: Listing | None) -> Listing | None:
        """A listing of the folder, or ``previous`` when its time has not moved since a listing
        that found nothing new (a tick then costs one stat, however many files it holds)."""
        return previous if cursor.unchanged(folder_stamp(self.folder), time.time_ns()) else self.list(cursor)


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
    tags = {SOURCE_TAG: source}
    readers = [t.name for t in tables if source in t.landing_sources]

    @dg.sensor(
        name=sensor_name(source),
        job=job,
        minimum_interval_seconds=settings.interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            f"Watches landing/{source}/ (files matching {', '.join(globs)}; names starting with "
            f"'_' or '.' are in progress) and runs {job.name} when complete files arrive. "
            f"Waits while a run for {source} is queued or has yet to read the folder; a burst gives one run."
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext, lakehouse: LakehouseResource):
        started = clock()
        paths = lakehouse.paths
        folder = paths.local_path(paths.landing(source)) if paths.is_local else paths.landing(source)
        looker = Looker(folder, globs)
        cursor = LandingCursor.load(context.cursor)
        listing = looker.look(cursor, None)
        not_read = describe_not_ingested(str(folder), listing.not_read, globs) if listing and listing.not_read else ""
        if listing is not None and digest(listing.not_read) != cursor.warned:  # a warning per change, not per tick
            if not_read:
                context.log.warning(f"{source}: {not_read}")
            cursor = replace(cursor, warned=digest(listing.not_read))
            context.update_cursor(cursor.dump())
        poll = WATCH_POLL_S if isinstance(folder, Path) else WATCH_POLL_OBJECTS_S
        tick = Tick(started, str(folder), poll, not_read=not_read)

        def took() -> str:
            return f"tick {1000 * (clock() - started):.0f} ms, listing {1000 * looker.listed_s:.1f} ms"

        while True:
            decision = decide(
                listing, cursor, InstanceRuns(context.instance, tags, readers), clock(), settings, tick, source
            )
            if isinstance(decision, Skip | Retry | Watch) and decision.cursor is not None:
                cursor = decision.cursor
                context.update_cursor(cursor.dump())
            if isinstance(decision, Watch):
                sleep(decision.poll_s)
                tick = replace(tick, polls=tick.polls + 1)
                listing = looker.look(cursor, listing)
            elif isinstance(decision, Settle):
                sleep(decision.wait_s)
                tick = replace(tick, settled=True)
                listing = looker.list(cursor)
            elif isinstance(decision, Retry):
                context.log.info(
                    f"{source}: the last run ended badly; requesting {job.name} again to drain what it left ({took()})"
                )
                return retry_run_request(
                    decision.of, {**tags, "lakehouse/new_files": "0", "lakehouse/first_new_file": ""}
                )
            elif isinstance(decision, Request):
                return _requested(context, source, job.name, decision, took())
            else:
                context.log.info(f"{source}: skipped ({took()})")
                return dg.SkipReason(decision.message)

    return _sensor


def _requested(context: dg.SensorEvaluationContext, source: str, job: str, decision: Request, took: str):
    context.update_cursor(decision.next_cursor.dump())
    names = [f.name for f in decision.new]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    context.log.info(f"{source}: requesting {job} for {decision.what}: {shown} ({took})")
    return dg.RunRequest(
        run_key=decision.run_key,
        tags={
            SOURCE_TAG: source,
            "lakehouse/new_files": str(len(names)),
            "lakehouse/first_new_file": names[0] if names else "",
        },
    )
