"""``bronze_ad_impressions`` and ``bronze_ad_clicks``: one row per JSON-object line."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame

from lakehouse_assets.defs.bronze import BAD_LINE_COLUMNS, BAD_LINE_DOCS, BAD_LINE_TRACED
from lakehouse_assets.lib import (
    IS_JSON_OBJECT,
    RESCUED,
    Quarantine,
    expect_or_quarantine,
    landed_lines_conserved,
    landing,
    non_blank_lines,
    not_null,
    parse_json_lines,
    streaming_table,
)

IMPRESSION_FIELDS = {"impression_id": "string", "ad_id": "string", "user_id": "string", "impression_time": "string"}
CLICK_FIELDS = {"click_id": "string", "impression_id": "string", "click_time": "string"}
JSON_GLOB = "*.{json,jsonl,json.gz,jsonl.gz}"
# Rate limit: at most this many landed files per micro-batch.
LANDING_OPTIONS = {"maxFilesPerTrigger": "200"}


def parse_lines(lines: DataFrame, fields: dict[str, str]) -> DataFrame:
    """Landed lines to typed rows plus ``raw_line`` and ``_is_json_object`` (pure)."""
    non_blank = non_blank_lines(lines).withColumnRenamed("value", "raw_line")
    return parse_json_lines(non_blank, fields, column="raw_line")


IMPRESSION_COLUMN_DOCS = {
    "impression_id": "identity of the impression",
    "ad_id": "the ad shown",
    "user_id": "the customer it was shown to (customer_id)",
    "impression_time": "when the ad was shown (ISO-8601 text)",
}
CLICK_COLUMN_DOCS = {
    "click_id": "identity of the click",
    "impression_id": "the impression the click belongs to",
    "click_time": "when the ad was clicked (ISO-8601 text)",
}


@streaming_table(
    group="bronze",
    column_descriptions=IMPRESSION_COLUMN_DOCS,
    inputs={"lines": landing("ad_impressions", glob=JSON_GLOB, options=LANDING_OPTIONS)},
    expectations=[expect_or_quarantine("json_object", IS_JSON_OBJECT)],
    quarantine=Quarantine(
        "bronze_ad_impressions_quarantine",
        columns=BAD_LINE_COLUMNS,
        with_failures=False,
        column_descriptions=BAD_LINE_DOCS,
        traced_by=BAD_LINE_TRACED,
    ),
    columns=[*IMPRESSION_FIELDS, RESCUED, "_source_file", "_ingested_at"],
    checks=[
        landed_lines_conserved(quarantine="bronze_ad_impressions_quarantine"),
        not_null("_source_file", "_ingested_at"),
    ],
    freshness=timedelta(hours=6),
    owners=["team:data-platform"],
    tags={"layer": "bronze"},
)
def bronze_ad_impressions(lines: DataFrame) -> DataFrame:
    """Ad impressions as landed; lines that are not JSON objects go to the quarantine table."""
    return parse_lines(lines, IMPRESSION_FIELDS)


@streaming_table(
    group="bronze",
    column_descriptions=CLICK_COLUMN_DOCS,
    inputs={"lines": landing("ad_clicks", glob=JSON_GLOB, options=LANDING_OPTIONS)},
    expectations=[expect_or_quarantine("json_object", IS_JSON_OBJECT)],
    quarantine=Quarantine(
        "bronze_ad_clicks_quarantine",
        columns=BAD_LINE_COLUMNS,
        with_failures=False,
        column_descriptions=BAD_LINE_DOCS,
        traced_by=BAD_LINE_TRACED,
    ),
    columns=[*CLICK_FIELDS, RESCUED, "_source_file", "_ingested_at"],
    checks=[landed_lines_conserved(quarantine="bronze_ad_clicks_quarantine"), not_null("_source_file", "_ingested_at")],
    freshness=timedelta(hours=6),
    owners=["team:data-platform"],
    tags={"layer": "bronze"},
)
def bronze_ad_clicks(lines: DataFrame) -> DataFrame:
    """Ad clicks as landed (re-deliveries repeat `click_id`); bad lines go to quarantine."""
    return parse_lines(lines, CLICK_FIELDS)


__all__ = ["bronze_ad_clicks", "bronze_ad_impressions", "parse_lines"]
