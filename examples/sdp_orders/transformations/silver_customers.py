"""Silver customers: the CRM's change feed applied as SCD type 1 and type 2 (Auto CDC)."""

from pyspark import pipelines as dp

# Both customer tables apply the same change feed; only how they store it differs.
CUSTOMER_CHANGES = {
    "source": "bronze_customer_changes",
    "keys": ["customer_id"],
    "sequence_by": "updated_at",
    "apply_as_deletes": "op = 'DELETE'",
    "except_column_list": ["op"],
}

dp.create_streaming_table("customers", comment="Each customer's latest details (SCD type 1).")
dp.create_auto_cdc_flow(target="customers", stored_as_scd_type=1, **CUSTOMER_CHANGES)

dp.create_streaming_table(
    "customers_history",
    comment="Every customer's tier and country over time (SCD type 2).",
    cluster_by=["customer_id"],  # liquid clustering: a customer's versions sit together
)
dp.create_auto_cdc_flow(
    target="customers_history", stored_as_scd_type=2, track_history_column_list=["tier", "country"], **CUSTOMER_CHANGES
)
