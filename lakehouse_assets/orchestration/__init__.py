"""Orchestration: jobs, sensors and schedules that run the pipeline by themselves."""

import dagster as dg

JOBS: list = []
SENSORS: list[dg.SensorDefinition] = []
SCHEDULES: list[dg.ScheduleDefinition] = []
