"""The Dagster adapter: assets, checks, jobs, sensors and schedules built from a list of tables."""
