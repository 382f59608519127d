"""``silver_events``: one row per valid ``event_id``, typed and enriched."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.defs.bronze.events import BRONZE_EVENTS_COLUMNS, EVENT_COLUMN_DOCS
from lakehouse_assets.lib import (
    Quarantine,
    expect_or_quarantine,
    merge,
    not_null,
    static,
    streaming_table,
    unique,
)

EVENT_TYPES = ("page_view", "add_to_cart", "purchase")
# ISO-8601 date and time, optional seconds/fraction, optional zone (Z or an offset; none = UTC).
ISO_TIMESTAMP = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}([.,]\d{1,9})?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$"
SILVER_CUSTOMERS_SCHEMA = (
    "customer_id string, name string, email string, tier string, country string, "
    "valid_from timestamp, valid_to timestamp, is_current boolean"
)
SILVER_EVENTS_COLUMNS = [
    "event_id", "event_time", "event_date", "user_id", "event_type", "product_id",
    "category", "amount", "page", "device_type", "customer_tier",
]  # fmt: skip

EXPECTATIONS = [
    expect_or_quarantine("event_id_present", r"event_id IS NOT NULL AND NOT event_id RLIKE '(?U)^\\s*$'"),
    expect_or_quarantine("event_time_valid", "event_ts IS NOT NULL"),
    expect_or_quarantine("event_type_known", f"event_type IN {EVENT_TYPES}"),
    expect_or_quarantine(
        "purchase_amount_valid",
        "event_type IS DISTINCT FROM 'purchase' OR (amount IS NOT NULL AND amount >= 0 AND NOT isnan(amount))",
    ),
]


def parse_event_time(raw: Column) -> Column:
    """An ISO-8601 string to a UTC timestamp; null when it is not one (never an ANSI error)."""
    normalized = F.regexp_replace(F.regexp_replace(raw, ",", "."), "[Tt]", "T")
    return F.when(raw.rlike(ISO_TIMESTAMP), F.try_to_timestamp(F.regexp_replace(normalized, "z$", "Z")))


def device_type(user_agent: Column) -> Column:
    return (
        F.when(user_agent.contains("Mobile"), "mobile")
        .when(user_agent.contains("Tablet"), "tablet")
        .otherwise("desktop")
    )


def clean_events(bronze: DataFrame, customers: DataFrame) -> DataFrame:
    """Typed events with device type and the customer's current tier (pure, stream or batch).

    Keeps ``event_ts`` and the bronze columns the expectations and the quarantine need.
    """
    current_tiers = F.broadcast(
        customers.where("is_current").select(
            F.col("customer_id").alias("__lh_customer_id"), F.col("tier").alias("customer_tier")
        )
    )
    typed = bronze.withColumn("event_ts", parse_event_time(F.col("event_time")))
    return (
        typed.join(current_tiers, typed["user_id"] == current_tiers["__lh_customer_id"], "left")
        .drop("__lh_customer_id")
        .withColumn("event_date", F.to_date("event_ts"))
        .withColumn("device_type", device_type(F.col("user_agent")))
    )


def to_silver_columns(events: DataFrame) -> DataFrame:
    """The contract's column order and types for rows that passed every expectation."""
    return events.withColumn("event_time", F.col("event_ts")).select(*SILVER_EVENTS_COLUMNS)


SILVER_EVENT_COLUMN_DOCS = {
    "event_id": "one row per distinct event_id that passed every expectation",
    "event_time": "the event's time in UTC",
    "event_date": "the UTC date of event_time",
    "user_id": "the customer (customer_id in silver_customers)",
    "event_type": "page_view, add_to_cart or purchase",
    "product_id": "the product; null when absent",
    "category": "the product's category; null when absent",
    "amount": "purchase amount (double); null for other event types",
    "page": "the page; null when absent",
    "device_type": "mobile, tablet or desktop, from the user agent",
    "customer_tier": "the user's current tier in silver_customers when the event was processed; null when unknown",
}


@streaming_table(
    group="silver",
    column_descriptions=SILVER_EVENT_COLUMN_DOCS,
    inputs={"silver_customers": static("silver_customers", schema_if_missing=SILVER_CUSTOMERS_SCHEMA)},
    expectations=EXPECTATIONS,
    quarantine=Quarantine(
        "silver_events_quarantine", columns=BRONZE_EVENTS_COLUMNS, column_descriptions=EVENT_COLUMN_DOCS
    ),
    publish=to_silver_columns,
    checks=[
        unique("event_id"),
        not_null("event_id", "event_time", "event_date", "user_id", "event_type", "device_type"),
    ],
    sink=merge(keys=["event_id"], when_matched="ignore"),
    partition_by=["event_date"],
    owners=["team:data-platform"],
    freshness=timedelta(hours=6),
    tags={"layer": "silver"},
)
def silver_events(bronze_events: DataFrame, silver_customers: DataFrame) -> DataFrame:
    """Clean events: one row per valid `event_id` however late it arrives (insert-only MERGE,
    no watermark), typed, with `device_type` and the customer's current tier. Rows failing an
    expectation go to `silver_events_quarantine` with the names they failed."""
    return clean_events(bronze_events, silver_customers)
