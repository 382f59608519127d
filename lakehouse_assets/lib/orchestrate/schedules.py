"""Schedules: nightly Delta maintenance per table (on), a periodic full-graph refresh (off).

Cron expressions are UTC and come from the settings (:mod:`lakehouse_assets.lib.settings`),
read when the definitions are built:

* ``LAKEHOUSE_MAINTENANCE_CRON`` (default ``0 3 * * *``): every table's maintenance job. The
  run queue admits one maintenance run at a time (``tag_concurrency_limits`` on
  ``lakehouse/maintenance`` in ``dagster.yaml``), so the tables are maintained one after the
  other, each in its own table's pool.
* ``LAKEHOUSE_VACUUM_RETENTION_HOURS`` (default 168): VACUUM retention; less is refused.
* ``LAKEHOUSE_REFRESH_CRON`` (default ``0 * * * *``): the ``refresh_all`` safety net, which
  materializes every table incrementally, one run per landing source. Off by default: the sensors already do the work;
  turn it on in the UI (Automation -> refresh_all_schedule) to catch up anything they missed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import dagster as dg

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.orchestrate.jobs import SOURCE_TAG, asset_keys, fed_by, landing_sources
from lakehouse_assets.lib.orchestrate.maintenance import MAINTENANCE_TAG, maintenance_job_name
from lakehouse_assets.lib.settings import current

if TYPE_CHECKING:  # the job type is not exported by name from dagster
    from lakehouse_assets.lib.orchestrate.dagster_internals import UnresolvedAssetJobDefinition


def build_maintenance_schedules(jobs: Mapping[str, dg.JobDefinition]) -> list[dg.ScheduleDefinition]:
    settings = current()
    cron, retention = settings.maintenance_cron, settings.vacuum_retention_hours
    schedules = []
    for table, job in jobs.items():
        op_name = next(iter(job.graph.node_dict))
        schedules.append(
            dg.ScheduleDefinition(
                name=f"{maintenance_job_name(table)}_nightly",
                job=job,
                cron_schedule=cron,
                execution_timezone="UTC",
                run_config={"ops": {op_name: {"config": {"retention_hours": retention}}}},
                tags={MAINTENANCE_TAG: "true"},
                default_status=dg.DefaultScheduleStatus.RUNNING,
                description=f"Nightly OPTIMIZE + VACUUM (retention {retention} h) of {table}.",
            )
        )
    return schedules


def refresh_requests(tables: Sequence[TableSpec], run_key: str) -> list[dg.RunRequest]:
    """One run per landing source over the tables it feeds (:func:`fed_by`), and one for any
    table no source feeds: a broken customers file then fails the customers run only, and the
    events chain still runs, joining the last good customers version."""
    requests: list[dg.RunRequest] = []
    covered: set[str] = set()
    for source in landing_sources(tables):
        fed = fed_by(tables, source)
        covered.update(t.name for t in fed)
        requests.append(
            dg.RunRequest(run_key=f"{run_key}:{source}", asset_selection=asset_keys(fed), tags={SOURCE_TAG: source})
        )
    rest = asset_keys([t for t in tables if t.name not in covered])
    if rest:
        requests.append(dg.RunRequest(run_key=f"{run_key}:other", asset_selection=rest))
    return requests


def build_refresh_schedule(job: UnresolvedAssetJobDefinition, tables: Sequence[TableSpec]) -> dg.ScheduleDefinition:
    @dg.schedule(
        name="refresh_all_schedule",
        job=job,
        cron_schedule=current().refresh_cron,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description=(
            "Safety net, off by default: materializes every table incrementally on a timer, "
            "catching up anything the landing sensors did not trigger; one run per landing source, "
            "so one broken feed does not hold back the others."
        ),
    )
    def refresh_all_schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
        return refresh_requests(tables, context.scheduled_execution_time.isoformat())

    return refresh_all_schedule
