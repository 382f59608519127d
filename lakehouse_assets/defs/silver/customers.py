"""``silver_customers``: the customers change feed applied as SCD type 2 history."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.defs.bronze.customers import BRONZE_CUSTOMERS_COLUMNS, CUSTOMER_COLUMN_DOCS
from lakehouse_assets.defs.silver.events import parse_event_time
from lakehouse_assets.lib import (
    Quarantine,
    auto_cdc,
    expect_or_quarantine,
    not_null,
    scd2_valid,
    streaming_table,
)

TRACKED = ["name", "email", "tier", "country"]
OPS = ("upsert", "delete")

EXPECTATIONS = [
    expect_or_quarantine("customer_id_present", "customer_id IS NOT NULL AND trim(customer_id) <> ''"),
    expect_or_quarantine("op_known", f"op IN {OPS}"),
    expect_or_quarantine("updated_at_valid", "changed_at IS NOT NULL"),
]


def typed_changes(bronze: DataFrame) -> DataFrame:
    """Bronze customer rows plus ``changed_at``, ``updated_at`` as a UTC timestamp (null when it
    is not an ISO-8601 timestamp); the bronze columns stay for the quarantine (pure)."""
    return bronze.select(*BRONZE_CUSTOMERS_COLUMNS, parse_event_time(F.col("updated_at")).alias("changed_at"))


SCD2_COLUMN_DOCS = {
    **{k: v for k, v in CUSTOMER_COLUMN_DOCS.items() if k not in ("op", "updated_at")},
    "valid_from": "updated_at of the change that opened this version",
    "valid_to": "updated_at of the change that closed it; null while current",
    "is_current": "true for the customer's open version",
}


@streaming_table(
    group="silver",
    column_descriptions=SCD2_COLUMN_DOCS,
    expectations=EXPECTATIONS,
    quarantine=Quarantine(
        "silver_customers_quarantine",
        columns=BRONZE_CUSTOMERS_COLUMNS,
        column_descriptions=CUSTOMER_COLUMN_DOCS,
    ),
    sink=auto_cdc(
        keys=["customer_id"],
        sequence_by="changed_at",
        track=TRACKED,
        delete_when="op = 'delete'",
        stored_as="scd2",
    ),
    table_properties={"delta.dataSkippingStatsColumns": "customer_id,valid_from,valid_to"},
    checks=[scd2_valid("customer_id"), not_null("customer_id", "valid_from", "is_current")],
    freshness=timedelta(hours=24),
    owners=["team:data-platform"],
    tags={"layer": "silver"},
)
def silver_customers(bronze_customers: DataFrame) -> DataFrame:
    """SCD type 2 history of customers: changes applied in `updated_at` order whatever order
    they arrive in; re-delivered changes and upserts that change nothing create no version;
    deletes close the current version. Invalid changes go to `silver_customers_quarantine`."""
    return typed_changes(bronze_customers)


__all__ = ["silver_customers", "typed_changes"]
