"""Orchestration: jobs, sensors and schedules that run the pipeline by themselves.

Everything is derived from the declared tables (``lakehouse_assets.defs.TABLES``):

* ``ingest_<source>`` jobs and ``landing_<source>_sensor`` sensors, one per landing source;
* ``maintain_<table>`` jobs (OPTIMIZE + VACUUM) with their nightly schedules;
* ``refresh_all`` and its schedule (off by default).
"""

import dagster as dg

from lakehouse_assets.defs import TABLES
from lakehouse_assets.orchestration.jobs import build_ingest_jobs, build_refresh_job, landing_sources
from lakehouse_assets.orchestration.maintenance import build_maintenance_jobs
from lakehouse_assets.orchestration.schedules import build_maintenance_schedules, build_refresh_schedule
from lakehouse_assets.orchestration.sensors import build_landing_sensor

INGEST_JOBS = build_ingest_jobs(TABLES)
REFRESH_JOB = build_refresh_job()
MAINTENANCE_JOBS = build_maintenance_jobs(TABLES)

JOBS: list = [*INGEST_JOBS.values(), REFRESH_JOB, *MAINTENANCE_JOBS.values()]
SENSORS: list[dg.SensorDefinition] = [
    build_landing_sensor(source, readers, INGEST_JOBS[source]) for source, readers in landing_sources(TABLES).items()
]
SCHEDULES: list[dg.ScheduleDefinition] = [
    *build_maintenance_schedules(MAINTENANCE_JOBS),
    build_refresh_schedule(REFRESH_JOB),
]
