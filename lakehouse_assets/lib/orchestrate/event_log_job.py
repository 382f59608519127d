"""The job that brings the event log (``_lakehouse_events``) up to date with the events runs have
recorded since (:mod:`lakehouse_assets.lib.engine.state.event_log`), on the maintenance schedule;
``python -m lakehouse_assets.sql`` does the same before every query."""

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from lakehouse_assets.lib.engine.state import event_log
from lakehouse_assets.lib.engine.state.catalog import register_table
from lakehouse_assets.lib.orchestrate.maintenance import MAINTENANCE_TAG
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
from lakehouse_assets.lib.settings import current

JOB_NAME = "sync_event_log"


@dg.op(
    name="move_pending_events",
    tags={"kind": "delta"},
    description="Move the runs' pending events into _lakehouse_events.",
)
def _sync(context: dg.OpExecutionContext, spark: LazyPySparkResource, lakehouse: LakehouseResource) -> dg.Output[None]:
    session, paths = spark.spark_session, lakehouse.paths
    added = event_log.sync(session, paths, context.log.info)
    if added:
        register_table(session, event_log.EVENT_LOG_TABLE, event_log.event_log_path(paths), context.log.warning)
    return dg.Output(None, metadata={"events_added": added})


@dg.job(
    name=JOB_NAME,
    description="Bring the event log (_lakehouse_events) up to date with the runs since its last sync.",
    tags={MAINTENANCE_TAG: "true"},
)
def sync_event_log_job() -> None:
    _sync()


def build_event_log_schedule() -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name=f"{JOB_NAME}_nightly",
        job=sync_event_log_job,
        cron_schedule=current().maintenance_cron,
        execution_timezone="UTC",
        tags={MAINTENANCE_TAG: "true"},
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Nightly: the runs' events into _lakehouse_events (queries through lakehouse_assets.sql sync first).",
    )
