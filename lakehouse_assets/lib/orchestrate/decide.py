"""A landing sensor's tick as a decision: what the tick saw in, one of five answers out.

:func:`decide` takes what a look at the landing folder found (a :class:`Listing`, or None when
the folder is unchanged since a listing that found nothing new), the sensor's cursor, the
source's runs (one going, or the newest ones ended badly), the time, the settings and what the
tick has done so far, and answers

* :class:`Skip` — nothing to ask for now, and why;
* :class:`Retry` — the source's last run failed or was cancelled: ask again (after a back-off);
* :class:`Watch` — look at the folder again in ``poll_s`` within this tick (nothing new yet, or
  new files behind a going run that has yet to read the folder);
* :class:`Settle` — files are still landing: wait ``wait_s`` in this tick and look again;
* :class:`Request` — one run for N new files, and the cursor that goes with it.

It reads no file, no clock and no Dagster instance, so every outcome is tested with inputs made
in the test (``lakehouse_assets_tests/unit/test_sensor_decide.py``); the sensor
(:mod:`.sensors`) gathers the inputs and acts on the answer. ``Skip``, ``Retry`` and ``Watch``
may carry a cursor to store (a listing that found nothing new stamps it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from lakehouse_assets.lib.engine.intake.cursor import Evaluation, LandedFile, LandingCursor
from lakehouse_assets.lib.orchestrate.landing import Listing
from lakehouse_assets.lib.settings import Settings, current

# The defaults are the settings' own (stated once, in lib/settings.py).
_DEFAULTS = Settings()

# How often a watching tick lists the folder: a local listing is a directory read; an object
# store's is a request that may be billed.
WATCH_POLL_S = 0.25
WATCH_POLL_OBJECTS_S = 1.0
# A tick's watch and settle wait end within this many seconds of its start, so it is over before
# the daemon's next pass (5 s after this one) and the sensor is not skipped for a pass.
TICK_BUDGET_S = 4.0


@dataclass(frozen=True)
class RetryPolicy:
    """How long the sensor waits after a failed run before it asks for the next one: ``first_s``,
    doubled for every further failure in a row, at most ``max_s``."""

    first_s: float = _DEFAULTS.sensor_retry_backoff_s
    max_s: float = 1800.0

    def wait_s(self, failures_in_a_row: int) -> float:
        return min(self.max_s, self.first_s * 2 ** max(0, failures_in_a_row - 1))


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

    interval_s: int = _DEFAULTS.sensor_interval_s
    settle_s: float = _DEFAULTS.sensor_settle_s
    max_settle_s: float = _DEFAULTS.sensor_max_settle_s
    grace_s: float = _DEFAULTS.sensor_grace_s
    settle_wait_s: float = _DEFAULTS.sensor_settle_wait_s
    watch_s: float = 0.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @classmethod
    def from_env(cls) -> SensorSettings:
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

    @property
    def watch_cut_s(self) -> float:
        """The watch, cut so that the longest settle wait still ends within the tick's budget."""
        return min(self.watch_s, TICK_BUDGET_S - min(self.settle_s, self.settle_wait_s))

    def settling_for(self, new: Sequence[LandedFile], now: float) -> float:
        """Seconds until the folder counts as settled (0: settled, or its oldest new file has
        waited ``max_settle_s``), for new files sorted by arrival."""
        if not new:
            return 0.0
        newest_age, oldest_age = now - new[-1].arrived_ns / 1e9, now - new[0].arrived_ns / 1e9
        if newest_age < self.settle_s and oldest_age < self.max_settle_s:
            return self.settle_s - max(0.0, newest_age)
        return 0.0


@dataclass(frozen=True)
class GoingRun:
    """The source's newest run that is queued or going; ``past_reading``: the tables it
    reads the landing folder into are materialized by it (a file landing now is the next run's)."""

    run_id: str
    job_name: str
    status: str
    past_reading: bool = False


@dataclass(frozen=True)
class Stranded:
    """The source's newest run ended badly (``failures`` in a row), at ``ended`` (epoch s)."""

    run_id: str
    job_name: str
    status: str
    ended: float
    failures: int

    def wait_left(self, now: float, policy: RetryPolicy) -> float:
        return max(0.0, policy.wait_s(self.failures) - (now - self.ended))


class Runs(Protocol):
    """The source's runs as the decision needs them (the sensor's view asks the instance only
    for what :func:`decide` reads)."""

    @property
    def going(self) -> GoingRun | None: ...

    @property
    def stranded(self) -> Stranded | None: ...


@dataclass(frozen=True)
class KnownRuns:
    going: GoingRun | None = None
    stranded: Stranded | None = None


@dataclass(frozen=True)
class Tick:
    """What the tick has done so far: when it started (epoch s), its watch polls, whether it
    waited for the folder to settle; and how to name the folder in its reasons."""

    started: float
    folder: str = ""
    poll_s: float = WATCH_POLL_S
    polls: int = 0
    settled: bool = False
    not_read: str = ""

    @property
    def first_look(self) -> bool:
        return self.polls == 0 and not self.settled

    def may_watch(self, now: float, settings: SensorSettings) -> bool:
        cut = settings.watch_cut_s
        return self.polls < int(cut / self.poll_s) and now + self.poll_s <= self.started + cut


@dataclass(frozen=True)
class Skip:
    message: str
    cursor: LandingCursor | None = None


@dataclass(frozen=True)
class Retry:
    of: Stranded
    cursor: LandingCursor | None = None


@dataclass(frozen=True)
class Watch:
    poll_s: float
    cursor: LandingCursor | None = None


@dataclass(frozen=True)
class Settle:
    wait_s: float


@dataclass(frozen=True)
class Request:
    new: tuple[LandedFile, ...]
    unidentified: int
    next_cursor: LandingCursor
    run_key: str

    @property
    def what(self) -> str:
        return described(len(self.new), self.unidentified)


Decision = Skip | Retry | Watch | Settle | Request


def described(new: int, unidentified: int) -> str:
    before = f" and {unidentified} arriving before the cursor window" if unidentified else ""
    return f"{new} new file(s){before}"


def decide(
    listing: Listing | None,
    cursor: LandingCursor,
    runs: Runs,
    now: float,
    settings: SensorSettings,
    tick: Tick,
    source: str = "",
) -> Decision:
    """What the tick does next (see the module's docstring)."""
    grace_ns = int(settings.grace_s * 1e9)
    result = listing.evaluate(cursor, grace_ns) if listing is not None else Evaluation([], 0, cursor)
    if not result.has_work:
        return _nothing_new(listing, cursor, result, runs, now, settings, tick)
    what = described(len(result.new), result.unidentified)
    run = runs.going
    # A run past its reading of the folder cannot take a new file: the next run starts now, its
    # steps each waiting only for their own table's writer (the table pools), not for its tail.
    checked = listing.checked_cursor(cursor) if listing is not None else None
    if run is not None and not run.past_reading:
        if tick.may_watch(now, settings):
            return Watch(tick.poll_s, checked)
        return Skip(
            f"{what} waiting: run {run.run_id[:8]} of {run.job_name} is {run.status}. "
            "It or the next run drains every new file, so the sensor waits for it to finish.",
            checked,
        )
    settling = settings.settling_for(result.new, now)
    if 0 < settling <= settings.settle_wait_s and not tick.settled:
        return Settle(settling)
    if settling > 0:
        newest_age = now - result.new[-1].arrived_ns / 1e9
        return Skip(
            f"{what} waiting {settings.settle_s:g}s for the landing folder to settle "
            f"(newest arrived {max(0.0, newest_age):.1f}s ago), so a burst gives one run.",
            checked,
        )
    next_cursor = listing.marked(result.next_cursor) if listing is not None else result.next_cursor
    return Request(tuple(result.new), result.unidentified, next_cursor, result.run_key(source))


def _nothing_new(
    listing: Listing | None,
    cursor: LandingCursor,
    result: Evaluation,
    runs: Runs,
    now: float,
    settings: SensorSettings,
    tick: Tick,
) -> Decision:
    stamped = listing.stamped(replace(result.next_cursor, warned=cursor.warned)) if listing is not None else cursor
    keep = stamped if stamped != cursor else None
    if tick.settled:
        return Skip(f"No new files in {tick.folder} (the new ones were removed while settling).", keep)
    if tick.first_look and runs.going is None and (stranded := runs.stranded) is not None:
        left = stranded.wait_left(now, settings.retry)
        if left > 0:
            return Skip(
                f"run {stranded.run_id[:8]} of {stranded.job_name} ended {stranded.status} "
                f"({stranded.failures} in a row); asking for another run {left:.0f}s from now, "
                "since what it did not drain is still to do.",
                keep,
            )
        return Retry(stranded, keep)
    if tick.may_watch(now, settings):
        return Watch(tick.poll_s, keep)
    if listing is None:
        seen = "unchanged since a listing that found nothing new"
    else:
        seen = f"{listing.count} complete file(s), all seen" if listing.count else "no complete files yet"
    ignored = (
        f"{listing.in_progress} in-progress name(s) ignored" if listing is not None and listing.in_progress else ""
    )
    details = ", ".join(x for x in [seen, ignored, tick.not_read] if x)
    return Skip(f"No new files in {tick.folder} ({details}; tick {1000 * (now - tick.started):.0f} ms).", keep)
