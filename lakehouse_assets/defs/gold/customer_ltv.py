"""``gold_customer_ltv``: lifetime revenue and orders per user, exact after every run."""

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


def customer_ltv(events: DataFrame) -> DataFrame:
    """Running totals of purchases per ``user_id`` (pure, batch): users without a purchase,
    and purchases without a user, have no row."""
    purchases = events.where((F.col("event_type") == "purchase") & F.col("user_id").isNotNull())
    return purchases.groupBy("user_id").agg(
        F.sum("amount").alias("lifetime_revenue"),
        F.count(F.lit(1)).alias("orders"),
        F.min("event_time").alias("first_purchase_at"),
        F.max("event_time").alias("last_purchase_at"),
    )


LTV_COLUMN_DOCS = {
    "user_id": "the customer (customer_id)",
    "lifetime_revenue": "sum of the user's purchase amounts",
    "orders": "number of purchases",
    "first_purchase_at": "time of the first purchase",
    "last_purchase_at": "time of the latest purchase",
}


@streaming_table(
    group="gold",
    column_descriptions=LTV_COLUMN_DOCS,
    # The change data feed sees silver's inserts and, after a full refresh of silver, its deletes.
    # maxBytesPerTrigger splits a large backlog into several MERGEs of bounded size.
    inputs={"silver_events": change_feed("silver_events", options={"maxBytesPerTrigger": "256m"})},
    # Update semantics through MERGE: the users a micro-batch touches are recomputed from
    # silver_events (re-read filtered on user_id) and their rows replaced in one MERGE.
    sink=recompute(keys=["user_id"], reread_by="user_id"),
    checks=[
        caught_up_with_landing(GOLD_CAUGHT_UP),
        unique("user_id"),
        not_null("user_id", "lifetime_revenue", "orders", "first_purchase_at", "last_purchase_at"),
        reconciles_with(
            "silver_events",
            {"revenue": "sum(lifetime_revenue)", "orders": "sum(orders)"},
            {
                "revenue": "sum(amount) FILTER (WHERE event_type = 'purchase' AND user_id IS NOT NULL)",
                "orders": "count_if(event_type = 'purchase' AND user_id IS NOT NULL)",
            },
        ),
    ],
    freshness=timedelta(hours=6),
    owners=["team:analytics"],
    tags={"layer": "gold"},
)
def gold_customer_ltv(silver_events: DataFrame) -> DataFrame:
    """Per user with a purchase: `lifetime_revenue`, `orders`, `first_purchase_at` and
    `last_purchase_at` over every purchase in `silver_events`, late events included; exact
    after every run, updated by MERGE for the users the new events touch."""
    return customer_ltv(silver_events)


__all__ = ["customer_ltv", "gold_customer_ltv"]
