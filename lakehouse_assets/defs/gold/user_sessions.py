"""``gold_user_sessions``: session windows per user, written once closed by the watermark."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.defs.gold.limits import GOLD_CAUGHT_UP
from lakehouse_assets.lib import caught_up_with_landing, not_null, stream, streaming_table, unique

SESSION_GAP = "30 minutes"


def user_sessions(events: DataFrame, gap: str = SESSION_GAP) -> DataFrame:
    """Session windows of each user's events with an inactivity ``gap`` (pure; stream or
    batch). ``session_end`` is the last event + ``gap``, as Spark's ``session_window`` gives."""
    is_purchase = F.col("event_type") == "purchase"
    # On a stream, deduplicating within the watermark drops every event at or behind the
    # watermark (counted by Spark as numRowsDroppedByWatermark). The session aggregation alone
    # would only drop events whose own window (event + gap) is behind it, and an event just
    # behind the watermark could then open a second session overlapping a closed one.
    # silver_events holds one row per event_id, so nothing else is dropped.
    if events.isStreaming:
        events = events.dropDuplicatesWithinWatermark(["event_id"])
    return (
        events.where(F.col("user_id").isNotNull())
        .groupBy("user_id", F.session_window("event_time", gap).alias("session"))
        .agg(
            F.count(F.lit(1)).alias("events"),
            F.count(F.when(F.col("event_type") == "page_view", 1)).alias("page_views"),
            F.count(F.when(is_purchase, 1)).alias("purchases"),
            F.coalesce(F.sum(F.when(is_purchase, F.col("amount"))), F.lit(0.0)).alias("revenue"),
        )
        .select(
            "user_id",
            F.col("session.start").alias("session_start"),
            F.col("session.end").alias("session_end"),
            "events",
            "page_views",
            "purchases",
            "revenue",
        )
    )


SESSION_COLUMN_DOCS = {
    "user_id": "the customer (customer_id)",
    "session_start": "first event of the session",
    "session_end": "last event + 30 minutes of inactivity",
    "events": "events in the session",
    "page_views": "page views in the session",
    "purchases": "purchases in the session",
    "revenue": "sum of purchase amounts in the session",
}


@streaming_table(
    group="gold",
    column_descriptions=SESSION_COLUMN_DOCS,
    # The watermark (latest event_time seen - allowed lateness) closes sessions and bounds the
    # state; skipChangeCommits ignores silver's non-append commits (a full refresh's deletes).
    inputs={"silver_events": stream("silver_events", watermark="event_time", options={"skipChangeCommits": "true"})},
    # Append mode: a session is emitted once, when the watermark passes its end.
    output_mode="append",
    table_properties={"delta.dataSkippingStatsColumns": "user_id,session_start,session_end"},
    checks=[
        caught_up_with_landing(GOLD_CAUGHT_UP),
        unique("user_id", "session_start"),
        not_null("user_id", "session_start", "session_end", "events"),
    ],
    freshness=timedelta(hours=6),
    owners=["team:analytics"],
    tags={"layer": "gold"},
)
def gold_user_sessions(silver_events: DataFrame) -> DataFrame:
    """User sessions (30-minute inactivity gap): events, page views, purchases and revenue.
    A session is written once the watermark (latest event time seen minus the allowed
    lateness, 1 hour by default) has passed its end, exactly once. Events later than the
    watermark are counted in `dropped_late`; they stay in `silver_events`."""
    return user_sessions(silver_events)


__all__ = ["gold_user_sessions", "user_sessions"]
