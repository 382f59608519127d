"""Meter readings landed as JSON, their schema inferred and evolved, and a reader downstream."""

from __future__ import annotations

from pyspark.sql import DataFrame

from lakehouse_assets.lib import landing, stream, streaming_table


@streaming_table(group="raw", inputs={"rows": landing("meters", format="json", glob="*.jsonl")})
def meter_readings(rows: DataFrame) -> DataFrame:
    """Readings as they land: every field a column, new fields as they appear."""
    return rows


@streaming_table(group="used", inputs={"readings": stream("meter_readings")})
def metered(readings: DataFrame) -> DataFrame:
    """Readings with a value, every column passed on."""
    return readings.where("kwh IS NOT NULL").drop("_ingested_at")
