"""A whole code location from a list of tables: assets with their checks, an ingest job and a
sensor per landing source and per Kafka subscription, nightly maintenance, the refresh safety
net, resources."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import dagster as dg

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.orchestrate.assets import build_table_assets
from lakehouse_assets.lib.orchestrate.event_log_job import build_event_log_schedule, sync_event_log_job
from lakehouse_assets.lib.orchestrate.freshness_sensor import build_freshness_sensor
from lakehouse_assets.lib.orchestrate.jobs import (
    build_ingest_jobs,
    build_kafka_jobs,
    build_refresh_job,
    kafka_subscriptions,
    landing_sources,
)
from lakehouse_assets.lib.orchestrate.kafka_sensor import build_kafka_sensor
from lakehouse_assets.lib.orchestrate.maintenance import build_maintenance_jobs
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
from lakehouse_assets.lib.orchestrate.schedules import build_maintenance_schedules, build_refresh_schedule
from lakehouse_assets.lib.orchestrate.sensors import build_landing_sensor
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import Settings, current
from lakehouse_assets.lib.spark.session import spark_resource

BUILT_KEPT = 8
_BUILDING = threading.Lock()
_BUILT: dict[
    tuple[tuple[int, ...], LakehousePaths, bool, bool, Settings], tuple[tuple[TableSpec, ...], dg.Definitions]
] = {}

AUTOMATION_SENSOR = "lakehouse_automation"


def automation_sensor() -> dg.AutomationConditionSensorDefinition:
    """Runs the assets of the code location that carry an ``automation_condition`` (a user's own
    ``@dg.asset(automation_condition=dg.AutomationCondition.eager())`` downstream of a gold table),
    on by default. The streaming tables carry none: their sensors and jobs run them, so this
    sensor never becomes a second writer of a table."""
    return dg.AutomationConditionSensorDefinition(
        AUTOMATION_SENSOR,
        target=dg.AssetSelection.all(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=10,
        description="Runs your own assets whose automation condition asks for it (e.g. eager, after a gold table updates).",
    )


def build_definitions(
    tables: Sequence[TableSpec],
    paths: LakehousePaths | None = None,
    *,
    sensors: bool = True,
    schedules: bool = True,
) -> dg.Definitions:
    """Dagster definitions for ``tables`` under one data root.

    Built once per process for the same tables, root and settings: Dagster calls a
    ``@dg.definitions`` function each time it loads the code location, six times in one
    ``dagster asset materialize`` (~0.1 s each on 2 cores).

    :param tables: the declared tables (for example ``collect_tables("my_pipeline.defs")``).
    :param paths: the data root (default: ``LAKEHOUSE_ROOT``, read now); checked first (:class:`RootUnusable`).
    :param sensors: add one sensor per landing source and per Kafka subscription, and the
        automation sensor for assets of your own (:func:`automation_sensor`).
    :param schedules: add nightly maintenance and the refresh_all schedule (off by default).
    """
    paths = paths or LakehousePaths.from_env()
    paths.check_root()
    # The tables are kept with the definitions, so their ids cannot be reused while cached.
    key = (tuple(map(id, tables)), paths, sensors, schedules, current())
    with _BUILDING:  # a code server loads its location from several threads
        if key not in _BUILT:
            while len(_BUILT) >= BUILT_KEPT:
                del _BUILT[next(iter(_BUILT))]
            _BUILT[key] = (tuple(tables), _build(tables, paths, sensors, schedules))
        return _BUILT[key][1]


def _build(tables: Sequence[TableSpec], paths: LakehousePaths, sensors: bool, schedules: bool) -> dg.Definitions:
    ingest = build_ingest_jobs(tables)
    from_kafka = build_kafka_jobs(tables)
    refresh = build_refresh_job()
    maintenance = build_maintenance_jobs(tables)
    freshness = build_freshness_sensor(tables, paths)
    return dg.Definitions(
        assets=build_table_assets(tables, paths),
        jobs=[*ingest.values(), *from_kafka.values(), refresh, *maintenance.values(), sync_event_log_job],
        sensors=[
            *[build_landing_sensor(s, readers, ingest[s]) for s, readers in landing_sources(tables).items()],
            *[build_kafka_sensor(s, readers, from_kafka[s]) for s, readers in kafka_subscriptions(tables).items()],
            automation_sensor(),
            *([freshness] if freshness else []),
        ]
        if sensors
        else [],
        schedules=[
            *build_maintenance_schedules(maintenance),
            build_refresh_schedule(refresh, tables),
            build_event_log_schedule(),
        ]
        if schedules
        else [],
        resources={"spark": spark_resource(), "lakehouse": LakehouseResource(root=paths.root)},
        # One process per run, so every step shares one SparkSession (one JVM per run).
        executor=dg.in_process_executor,
    )
