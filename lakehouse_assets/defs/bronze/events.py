"""``bronze_events``: one row per JSON-object line of the events landing files, and per
JSON-object message of Kafka topic ``events`` when a broker is configured."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame

from lakehouse_assets.defs.bronze import BAD_LINE_COLUMNS, BAD_LINE_DOCS, BAD_LINE_TRACED
from lakehouse_assets.lib import (
    IS_JSON_OBJECT,
    RESCUED,
    Quarantine,
    append_flow,
    expect_or_quarantine,
    kafka,
    landed_lines_conserved,
    landing,
    non_blank_lines,
    not_null,
    parse_json_lines,
    streaming_table,
)

EVENT_FIELDS = {
    "event_id": "string",
    "event_time": "string",
    "user_id": "string",
    "event_type": "string",
    "product_id": "string",
    "category": "string",
    "page": "string",
    "user_agent": "string",
    "amount": "double",
}
BRONZE_EVENTS_COLUMNS = [*EVENT_FIELDS, RESCUED, "_source_file", "_ingested_at"]


def parse_event_lines(lines: DataFrame) -> DataFrame:
    """Landed lines (``value``, ``_source_file``, ``_ingested_at``) to typed event rows.

    Pure: blank lines are dropped; every other line becomes a row with ``raw_line`` and the
    ``_is_json_object`` flag that decides between the table and its quarantine.
    """
    non_blank = non_blank_lines(lines).withColumnRenamed("value", "raw_line")
    return parse_json_lines(non_blank, EVENT_FIELDS, column="raw_line")


EVENT_COLUMN_DOCS = {
    "event_id": "identity of the logical event; re-deliveries repeat it",
    "event_time": "as landed (ISO-8601 text; parsed in silver)",
    "user_id": "the customer (customer_id)",
    "event_type": "page_view, add_to_cart or purchase (checked in silver)",
    "amount": "purchase amount; null when absent or not a number",
    "product_id": "the product concerned; null when none",
    "category": "the product's category; null when none",
    "page": "the page viewed; null when none",
    "user_agent": "the client's user agent (device_type in silver comes from it)",
}


@streaming_table(
    group="bronze",
    column_descriptions=EVENT_COLUMN_DOCS,
    inputs={"lines": landing("events", glob="*.{json,jsonl,json.gz,jsonl.gz}")},
    # The same events from Kafka topic `events`, where a broker is configured
    # (LAKEHOUSE_KAFKA_BOOTSTRAP): its own checkpoint, the same parsing and quarantine.
    flows=[append_flow("kafka", inputs={"lines": kafka("events")})],
    expectations=[expect_or_quarantine("json_object", IS_JSON_OBJECT)],
    quarantine=Quarantine(
        "bronze_events_quarantine",
        columns=BAD_LINE_COLUMNS,
        with_failures=False,
        column_descriptions=BAD_LINE_DOCS,
        traced_by=BAD_LINE_TRACED,
    ),
    columns=BRONZE_EVENTS_COLUMNS,
    checks=[
        landed_lines_conserved(quarantine="bronze_events_quarantine"),
        not_null("_source_file", "_ingested_at"),
    ],
    owners=["team:data-platform"],
    freshness=timedelta(hours=6),
    tags={"layer": "bronze"},
)
def bronze_events(lines: DataFrame) -> DataFrame:
    """Raw clickstream events as landed (and, with a broker configured, as produced to Kafka
    topic `events`): declared fields typed, everything else in `_rescued_data`, lines or
    messages that are not JSON objects in `bronze_events_quarantine`. Re-delivered records
    are kept: bronze is raw."""
    return parse_event_lines(lines)


__all__ = ["bronze_events", "parse_event_lines"]
