"""The demo pipeline, declared with the framework: bronze, silver and gold tables."""

from lakehouse_assets.defs.bronze.events import bronze_events
from lakehouse_assets.defs.gold.hourly_revenue import gold_hourly_revenue
from lakehouse_assets.defs.silver.events import silver_events

TABLES = [bronze_events, silver_events, gold_hourly_revenue]
