"""``gold_hourly_revenue``: revenue, orders and buyers per UTC hour and category."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.defs.gold.limits import GOLD_CAUGHT_UP
from lakehouse_assets.lib import (
    caught_up_with_landing,
    change_feed,
    not_null,
    recompute,
    reconciles_with,
    streaming_table,
    unique,
)


def hourly_revenue(events: DataFrame) -> DataFrame:
    """Purchases aggregated into one-hour tumbling windows per category (pure, batch)."""
    purchases = events.where(F.col("event_type") == "purchase")
    return (
        purchases.groupBy(
            F.window("event_time", "1 hour").alias("window"),
            F.coalesce(F.col("category"), F.lit("unknown")).alias("category"),
        )
        .agg(
            F.sum("amount").alias("revenue"),
            F.count(F.lit(1)).alias("orders"),
            F.count_distinct("user_id").alias("buyers"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "category",
            "revenue",
            "orders",
            "buyers",
        )
    )


REVENUE_COLUMN_DOCS = {
    "window_start": "start of the one-hour window (UTC)",
    "window_end": "end of the window (exclusive)",
    "category": "product category; unknown when null",
    "revenue": "sum of purchase amounts",
    "orders": "number of purchases",
    "buyers": "distinct users who purchased",
}


@streaming_table(
    group="gold",
    column_descriptions=REVENUE_COLUMN_DOCS,
    inputs={"silver_events": change_feed("silver_events")},
    # The windows a micro-batch touches are recomputed from silver_events; event_date (silver's
    # partition column) bounds the re-read to the days of the new events.
    sink=recompute(keys=["window_start", "category"], reread_by="event_date"),
    checks=[
        caught_up_with_landing(GOLD_CAUGHT_UP),
        unique("window_start", "category"),
        not_null("window_start", "window_end", "category", "revenue", "orders", "buyers"),
        reconciles_with(
            "silver_events",
            {"revenue": "sum(revenue)", "orders": "sum(orders)"},
            {
                "revenue": "sum(amount) FILTER (WHERE event_type = 'purchase')",
                "orders": "count_if(event_type = 'purchase')",
            },
        ),
    ],
    owners=["team:analytics"],
    freshness=timedelta(hours=6),
    tags={"layer": "gold"},
    priority=1,  # the revenue dashboard first: ahead of the other gold steps ready at the same time
)
def gold_hourly_revenue(silver_events: DataFrame) -> DataFrame:
    """Revenue (sum of `amount`), orders and distinct buyers of purchases per one-hour UTC
    window and category (`unknown` when null). Exact after every run, late events included:
    each run recomputes only the windows its new events touch."""
    return hourly_revenue(silver_events)
