"""No stranded files: when a source's last sensor run failed or was interrupted, what its
checkpoints have not drained is still work, even if no new file arrives. The sensor asks for a
new run of that source once per failed run, waiting longer after each failure in a row so a
permanent error does not spin (:class:`~.decide.RetryPolicy`, decided in :func:`~.decide.decide`).

This module reads the source's runs from the Dagster instance for that decision: a run queued
or going (and whether it has read the landing folder yet), and the newest runs that ended badly.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import dagster as dg

from lakehouse_assets.lib.orchestrate.decide import GoingRun, RetryPolicy, Stranded

__all__ = [
    "ENDED_BADLY",
    "IN_FLIGHT",
    "RETRY_OF_TAG",
    "InstanceRuns",
    "RetryPolicy",
    "in_flight_run",
    "past_reading",
    "retry_run_request",
    "stranded",
]

ENDED_BADLY = (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)
RETRY_OF_TAG = "lakehouse/retry_of"
PARENT_RUN_TAG = "dagster/parent_run_id"  # Dagster's tag on a re-execution of a run
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def in_flight_run(instance: dg.DagsterInstance, tags: dict[str, str]) -> dg.DagsterRun | None:
    """A queued or going run with these tags, if any."""
    runs = instance.get_runs(filters=dg.RunsFilter(tags=tags, statuses=IN_FLIGHT), limit=1)
    return runs[0] if runs else None


def past_reading(instance: dg.DagsterInstance, run: dg.DagsterRun, readers: Sequence[str]) -> bool:
    """``run`` is going and materialized every table in ``readers`` (those reading a landing
    folder or a Kafka subscription): their queries are over, so what lands now is the next run's."""
    if run.status != dg.DagsterRunStatus.STARTED or not readers:
        return False
    for name in readers:
        latest = instance.get_latest_materialization_event(dg.AssetKey(name))
        if latest is None or latest.run_id != run.run_id:
            return False
    return True


def stranded(instance: dg.DagsterInstance, tags: dict[str, str]) -> Stranded | None:
    """The newest run with ``tags`` when it ended badly, with how many did in a row (of the last
    20); None when the newest succeeded, is going, or there is none.

    A re-execution that succeeded (Dagster's retry of a run whose process died) is passed over: it
    re-ran its parent's failed steps only, so it makes nothing good for a run that started after
    that parent, as one may since runs overlap (the next run starts once the last has read the
    folder). A run that ended badly before it is then retried once more, at worst for nothing."""
    records = instance.get_run_records(filters=dg.RunsFilter(tags=tags), limit=20)
    failed = []
    for record in records:
        run = record.dagster_run
        if run.status == dg.DagsterRunStatus.SUCCESS and PARENT_RUN_TAG in run.tags:
            continue
        if run.status not in ENDED_BADLY:
            break
        failed.append(record)
    if not failed:
        return None
    newest, failures = failed[0], len(failed)
    run = newest.dagster_run
    ended = newest.end_time or newest.update_timestamp.timestamp()
    return Stranded(run.run_id, run.job_name, run.status.value, ended, failures)


class InstanceRuns:
    """The source's runs as :func:`~.decide.decide` reads them, each asked of the instance only
    when the decision needs it (once per look at the folder)."""

    def __init__(self, instance: dg.DagsterInstance, tags: dict[str, str], readers: Sequence[str] = ()) -> None:
        self.instance, self.tags, self.readers = instance, tags, readers

    @cached_property
    def going(self) -> GoingRun | None:
        run = in_flight_run(self.instance, self.tags)
        if run is None:
            return None
        return GoingRun(run.run_id, run.job_name, run.status.value, past_reading(self.instance, run, self.readers))

    @cached_property
    def stranded(self) -> Stranded | None:
        return stranded(self.instance, self.tags)


def retry_run_request(of: Stranded, tags: dict[str, str]) -> dg.RunRequest:
    """The run that drains what the stranded run ``of`` left (one per failed run: its key)."""
    return dg.RunRequest(run_key=f"retry-of-{of.run_id}", tags={**tags, RETRY_OF_TAG: of.run_id})
