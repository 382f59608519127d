"""``gold_hourly_revenue_changes``: every change of ``gold_hourly_revenue``, published to Kafka
topic ``gold_hourly_revenue_changes`` for downstream consumers (when a broker is configured)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.lib import change_feed, streaming_table, to_kafka

REVENUE_KEY = ["window_start", "category"]
CHANGE_COLUMNS = ["window_start", "window_end", "category", "revenue", "orders", "buyers"]


def revenue_changes(changes: DataFrame) -> DataFrame:
    """The change feed's rows as messages (pure): inserts, updates (their new values) and
    deletes, each with its change type and Delta commit version, so a consumer that sees one
    twice (the sink is at least once) keeps the highest version per key."""
    return changes.where(F.col("_change_type") != "update_preimage").select(
        *CHANGE_COLUMNS,
        F.when(F.col("_change_type") == "update_postimage", "update")
        .otherwise(F.col("_change_type"))
        .alias("change_type"),
        F.col("_commit_version").alias("commit_version"),
        F.col("_commit_timestamp").alias("commit_timestamp"),
    )


@streaming_table(
    group="gold",
    inputs={"changes": change_feed("gold_hourly_revenue")},
    sink=to_kafka("gold_hourly_revenue_changes", key=REVENUE_KEY),
    owners=["team:data-platform"],
    tags={"layer": "gold"},
)
def gold_hourly_revenue_changes(changes: DataFrame) -> DataFrame:
    """Each change of gold_hourly_revenue as a JSON message on Kafka topic
    `gold_hourly_revenue_changes` (key: window_start and category; value: the row, change_type
    insert/update/delete, commit_version). At least once: a run killed while sending re-sends
    that micro-batch. Publishes nothing, and keeps its place, while LAKEHOUSE_KAFKA_BOOTSTRAP
    is not set."""
    return revenue_changes(changes)
