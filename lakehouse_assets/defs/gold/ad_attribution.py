"""``gold_ad_attribution``: impressions with their clicks, written once the watermark passes."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.defs.gold.limits import GOLD_CAUGHT_UP
from lakehouse_assets.defs.silver.events import parse_event_time
from lakehouse_assets.lib import caught_up_with_landing, not_null, streaming_table, unique
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
    """Each impression with its earliest click within ``window`` of it (pure; stream or batch).

    Both sides are typed, watermarked on their event time and deduplicated within the
    watermark (the re-deliveries of the at-least-once feeds); rows without an id or a valid
    time are left out (they stay in bronze). Then one stateful operator: a session window per
    ``impression_id`` over the union of both sides, with a gap of ``window`` + 1 microsecond for
    the impression and 1 microsecond for a click. An impression's session is
    [impression_time, impression_time + window + 1 us]; its clicks inside the window fall in
    that session (and cannot extend it), so Spark emits it, once, in the micro-batch whose
    watermark reaches its end: when ``impression_time + window < watermark``.

    Not a stream-stream join: a stateful operator after a join sees the join's output
    watermark, which Spark holds back by the join's time range (``window``), and so released
    each impression about one window late (issue #22). ``lateness`` defaults to the configured
    allowed lateness (``LAKEHOUSE_ALLOWED_LATENESS``, 1 hour), read when called.
    """
    lateness = lateness or current().allowed_lateness
    imps = (
        impressions.select(
            "impression_id",
            "ad_id",
            "user_id",
            F.lit(None).cast("string").alias("click_id"),
            parse_event_time(F.col("impression_time")).alias("event_time"),
        )
        .where("impression_id IS NOT NULL AND event_time IS NOT NULL")
        .withWatermark("event_time", lateness)
    )
    clks = (
        clicks.select(
            "impression_id",
            F.lit(None).cast("string").alias("ad_id"),
            F.lit(None).cast("string").alias("user_id"),
            "click_id",
            parse_event_time(F.col("click_time")).alias("event_time"),
        )
        .where("click_id IS NOT NULL AND impression_id IS NOT NULL AND event_time IS NOT NULL")
        .withWatermark("event_time", lateness)
    )
    # Each side keeps its own watermark: the query's is the minimum of the two.
    events = _deduplicated(imps, ["impression_id"]).unionByName(_deduplicated(clks, ["click_id"]))
    is_click = F.col("click_id").isNotNull()
    # (dynamic session gaps must be calendar intervals, which a cast from text gives)
    gap = F.when(is_click, F.expr("CAST('1 microsecond' AS INTERVAL)")).otherwise(
        F.expr(f"CAST('{window} 1 microsecond' AS INTERVAL)")
    )
    per_impression = events.groupBy(
        "impression_id", F.session_window("event_time", gap).alias("attribution_window")
    ).agg(
        F.min(F.when(~is_click, F.col("event_time"))).alias("impression_time"),
        F.max(F.when(~is_click, F.col("ad_id"))).alias("ad_id"),
        F.max(F.when(~is_click, F.col("user_id"))).alias("user_id"),
        F.collect_list(F.when(is_click, F.struct(F.col("event_time").alias("click_time"), "click_id"))).alias("clicks"),
    )
    # Sessions of clicks alone (before their impression, outside its window, or of an impression
    # never seen) have no impression: dropped. A click counts inside [impression_time, + window].
    shown = F.col("impression_time")
    in_window = F.filter(
        "clicks", lambda c: (c["click_time"] >= shown) & (c["click_time"] <= shown + F.expr(f"INTERVAL {window}"))
    )
    first = F.array_min(in_window)  # the earliest click (then the smallest click_id)
    return per_impression.where(shown.isNotNull()).select(
        "impression_id",
        "ad_id",
        "user_id",
        "impression_time",
        first["click_id"].alias("click_id"),
        first["click_time"].alias("click_time"),
        first.isNotNull().alias("clicked"),
    )


ATTRIBUTION_COLUMN_DOCS = {
    "impression_id": "identity of the impression",
    "ad_id": "the ad shown",
    "user_id": "the customer it was shown to (customer_id)",
    "impression_time": "when the ad was shown",
    "click_id": "the click within 10 minutes of the impression; null when none",
    "click_time": "when that click happened",
    "clicked": "whether a click counted",
}


@streaming_table(
    group="gold",
    column_descriptions=ATTRIBUTION_COLUMN_DOCS,
    inputs={},  # bronze_ad_impressions and bronze_ad_clicks, read as streams
    output_mode="append",
    table_properties={"delta.dataSkippingStatsColumns": "impression_id,impression_time"},
    checks=[
        caught_up_with_landing(GOLD_CAUGHT_UP),
        unique("impression_id"),
        not_null("impression_id", "impression_time", "clicked"),
    ],
    freshness=timedelta(hours=6),
    owners=["team:marketing"],
    tags={"layer": "gold"},
)
def gold_ad_attribution(bronze_ad_impressions: DataFrame, bronze_ad_clicks: DataFrame) -> DataFrame:
    """One row per impression, written once, in the run whose watermark passes its attribution
    window: when `impression_time` + 10 minutes < watermark (the minimum over impressions and
    clicks of the latest event time seen, to the millisecond, minus 1 hour). Its earliest click
    with `click_time` in [`impression_time`, `impression_time` + 10 minutes], else
    `clicked = false`. One session window per impression over both streams: bounded state."""
    return attribute_clicks(bronze_ad_impressions, bronze_ad_clicks)


__all__ = ["ATTRIBUTION_COLUMNS", "attribute_clicks", "gold_ad_attribution"]
