"""``gold_ad_attribution``: impressions joined with their clicks, stream-stream, left outer."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.defs.silver.events import parse_event_time
from lakehouse_assets.lib import not_null, streaming_table, unique
from lakehouse_assets.lib.settings import current

ATTRIBUTION_WINDOW = "10 minutes"
ATTRIBUTION_COLUMNS = [
    "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time", "clicked",
]  # fmt: skip


def _deduplicated(df: DataFrame, keys: list[str]) -> DataFrame:
    """Re-deliveries dropped: within the watermark on a stream (bounded state), else all."""
    return df.dropDuplicatesWithinWatermark(keys) if df.isStreaming else df.dropDuplicates(keys)


def attribute_clicks(
    impressions: DataFrame,
    clicks: DataFrame,
    window: str = ATTRIBUTION_WINDOW,
    lateness: str | None = None,
) -> DataFrame:
    """Each impression with its click, if one came within ``window`` of it (pure; stream or
    batch). Both sides are typed, watermarked and deduplicated within the watermark (the
    re-deliveries of the at-least-once feeds); rows without an id or a valid time are left out
    (they stay in bronze). The time-range condition lets Spark drop the join state once the
    watermark passes an impression's window; the session window after the join holds every
    impression until then, so its row is final when written. ``lateness``: default the
    configured allowed lateness (``LAKEHOUSE_ALLOWED_LATENESS``, 1 hour), read when called."""
    lateness = lateness or current().allowed_lateness
    imps = (
        impressions.select(
            "impression_id", "ad_id", "user_id", parse_event_time(F.col("impression_time")).alias("impression_time")
        )
        .where("impression_id IS NOT NULL AND impression_time IS NOT NULL")
        .withWatermark("impression_time", lateness)
    )
    clks = (
        clicks.select(
            "click_id",
            F.col("impression_id").alias("click_impression_id"),
            parse_event_time(F.col("click_time")).alias("click_time"),
        )
        .where("click_id IS NOT NULL AND click_impression_id IS NOT NULL AND click_time IS NOT NULL")
        .withWatermark("click_time", lateness)
    )
    imps, clks = _deduplicated(imps, ["impression_id"]), _deduplicated(clks, ["click_id"])
    condition = (
        (clks["click_impression_id"] == imps["impression_id"])
        & (clks["click_time"] >= imps["impression_time"])
        & (clks["click_time"] <= imps["impression_time"] + F.expr(f"INTERVAL {window}"))
    )
    joined = imps.join(clks, condition, "left_outer")
    # The join alone emits a clicked impression as soon as its click arrives; a session window
    # of the attribution window's length on impression_time closes exactly when the watermark
    # passes the impression's window, so every impression is written once, then, with its
    # earliest click.
    per_impression = joined.groupBy(
        "impression_id", "ad_id", "user_id", F.session_window("impression_time", window).alias("attribution_window")
    ).agg(F.min_by("click_id", "click_time").alias("click_id"), F.min("click_time").alias("click_time"))
    return per_impression.select(
        "impression_id",
        "ad_id",
        "user_id",
        F.col("attribution_window.start").alias("impression_time"),
        "click_id",
        "click_time",
        F.col("click_id").isNotNull().alias("clicked"),
    )


@streaming_table(
    group="gold",
    inputs={},  # bronze_ad_impressions and bronze_ad_clicks, read as streams
    output_mode="append",
    table_properties={"delta.dataSkippingStatsColumns": "impression_id,impression_time"},
    checks=[unique("impression_id"), not_null("impression_id", "impression_time", "clicked")],
    freshness=timedelta(hours=6),
    owners=["team:marketing"],
    tags={"layer": "gold"},
)
def gold_ad_attribution(bronze_ad_impressions: DataFrame, bronze_ad_clicks: DataFrame) -> DataFrame:
    """One row per impression, written once the watermark has passed its attribution window:
    its (earliest) click when `click_time` lies in [`impression_time`, `impression_time` + 10
    minutes], else `clicked = false`. Stream-stream left outer join with watermarks on both
    sides, then a session window that closes with the impression's window: bounded state."""
    return attribute_clicks(bronze_ad_impressions, bronze_ad_clicks)


__all__ = ["ATTRIBUTION_COLUMNS", "attribute_clicks", "gold_ad_attribution"]
