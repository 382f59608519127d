"""A step's work tried again while its engine has a passing fault (a restart, a Python worker
that did not connect back, a reset connection)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from lakehouse_assets.lib.engine.errors import engine_lost, transient_cause
from lakehouse_assets.lib.errors import EngineUnavailable
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.session import EngineWatch

# After a table of this process gave up on an unreachable engine, the run's next tables within
# this many seconds try once: the engine was already waited for, through every back-off.
GAVE_UP_WINDOW_S = 120.0


def retrying(
    what: str,
    attempt: Callable[[SparkSession], Any],
    session: SparkSession,
    warn: Callable[[str], None],
    renew: Callable[[], SparkSession] | None = None,
    again: str = "the table",
    watch: EngineWatch | None = None,
) -> tuple[SparkSession, Any]:
    """``attempt(session)``, tried again with back-off while the engine has a passing fault
    (``LAKEHOUSE_TRANSIENT_TRIES``, ``LAKEHOUSE_TRANSIENT_BACKOFF_SECONDS``); the session it
    succeeded on, and its result. Safe for a table's run (every micro-batch write is idempotent,
    so a batch the failed try committed is not written twice) and for checks (they only read).

    An engine that another table of this process gave up on less than :data:`GAVE_UP_WINDOW_S`
    ago is tried once, so a run whose engine is gone for good fails in one wait, not in one per
    independent table.

    :param what: the table, for the messages.
    :param again: what is tried again, for the messages.
    :param renew: a new session for the next try (a restarted engine forgot the old one).
    :param watch: when the run's process last gave up on its engine (the Spark resource's; None:
        nothing remembered).
    :raises EngineUnavailable: the fault outlasted the last try (one sentence; the cause chained).
    """
    watch = watch or EngineWatch()
    settings = current()
    tries = max(1, settings.transient_tries)
    given_up = watch.gave_up_at is not None and time.monotonic() - watch.gave_up_at < GAVE_UP_WINDOW_S
    for number in range(1, tries + 1):
        try:
            result = attempt(session)
            watch.gave_up_at = None
            return session, result
        except Exception as error:
            cause = transient_cause(error, settings.spark_remote)
            if cause is None:
                raise
            lost = engine_lost(error, settings.spark_remote) is not None
            if lost and given_up:
                raise EngineUnavailable(
                    f"{what}: {cause}; not tried again (another table of this run had just given up on it)"
                ) from error
            if number == tries:
                if lost:
                    watch.gave_up_at = time.monotonic()
                raise EngineUnavailable(f"{what}: {cause}; gave up after {tries} tries") from error
            delay = settings.transient_backoff_s * 2 ** (number - 1)
            warn(f"{what}: {cause}; trying {again} again in {delay:.0f}s (try {number + 1} of {tries})")
            time.sleep(delay)
            if renew is not None:
                session = renew()
    raise AssertionError("unreachable")
