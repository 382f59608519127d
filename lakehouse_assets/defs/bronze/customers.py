"""``bronze_customers``: one row per CSV record of the customers change feed."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.defs.bronze import BAD_LINE_COLUMNS, BAD_LINE_DOCS, BAD_LINE_TRACED
from lakehouse_assets.lib import (
    RESCUED,
    Quarantine,
    expect_or_quarantine,
    landing,
    not_null,
    streaming_table,
)

CUSTOMER_FIELDS = ["customer_id", "name", "email", "tier", "country", "op", "updated_at"]
CORRUPT = "_corrupt_record"
BRONZE_CUSTOMERS_COLUMNS = [*CUSTOMER_FIELDS, RESCUED, "_source_file", "_ingested_at"]
CSV_SCHEMA = ", ".join(f"`{name}` string" for name in [*CUSTOMER_FIELDS, CORRUPT])
# RFC 4180 CSV: quoted fields may hold commas, newlines and doubled quotes (""). A record
# whose field count differs from the header's, or that is otherwise malformed, keeps its raw
# text in _corrupt_record instead of failing the query (PERMISSIVE mode).
CSV_OPTIONS = {
    "header": "true",
    "multiLine": "true",
    "quote": '"',
    "escape": '"',
    "mode": "PERMISSIVE",
    "columnNameOfCorruptRecord": CORRUPT,
    # Each file's header must name the declared columns in order (case-insensitive). Spark's
    # default maps by position and drops the first line as a header even when it is data, so a
    # file without a header would silently lose a record and a reordered one would swap values;
    # checked, such a file stops the run with a message naming it.
    "enforceSchema": "false",
    # Rate limit: at most this many landed files per micro-batch (the backlog is split).
    "maxFilesPerTrigger": "100",
}


def parse_customer_records(records: DataFrame) -> DataFrame:
    """CSV records (the declared fields, ``_corrupt_record``, ``_source_file``, ``_ingested_at``)
    to bronze rows (pure). Every field is a string, so nothing fails a type and
    ``_rescued_data`` stays null; malformed records keep their text in ``raw_line``."""
    return records.select(
        *CUSTOMER_FIELDS,
        F.lit(None).cast("string").alias(RESCUED),
        "_source_file",
        "_ingested_at",
        F.col(CORRUPT).alias("raw_line"),
    )


CUSTOMER_COLUMN_DOCS = {
    "customer_id": "identity of the customer",
    "name": "the customer's name as of this change",
    "email": "the customer's email as of this change",
    "tier": "the customer's tier as of this change",
    "country": "the customer's country as of this change",
    "op": "upsert or delete",
    "updated_at": "orders the changes of one customer (ISO-8601)",
}


@streaming_table(
    group="bronze",
    column_descriptions=CUSTOMER_COLUMN_DOCS,
    inputs={
        "records": landing("customers", format="csv", glob="*.{csv,csv.gz}", schema=CSV_SCHEMA, options=CSV_OPTIONS)
    },
    expectations=[expect_or_quarantine("csv_record_valid", "raw_line IS NULL")],
    quarantine=Quarantine(
        "bronze_customers_quarantine",
        columns=BAD_LINE_COLUMNS,
        with_failures=False,
        column_descriptions=BAD_LINE_DOCS,
        traced_by=BAD_LINE_TRACED,
    ),
    columns=BRONZE_CUSTOMERS_COLUMNS,
    checks=[not_null("_source_file", "_ingested_at")],
    freshness=timedelta(hours=24),
    owners=["team:data-platform"],
    tags={"layer": "bronze"},
)
def bronze_customers(records: DataFrame) -> DataFrame:
    """Customer changes as landed (CSV with a header): quoted fields with commas, quotes and
    newlines parse; malformed records go to `bronze_customers_quarantine` with their raw text.
    Re-delivered changes are kept: bronze is raw."""
    return parse_customer_records(records)


__all__ = ["BRONZE_CUSTOMERS_COLUMNS", "bronze_customers", "parse_customer_records"]
