"""Snapshot CDC as written for Lakeflow: a CRM export replaced by a full snapshot each day,
applied as changes to a current table (SCD type 1) and to a history (SCD type 2)."""

import dlt

SNAPSHOTS = spark.conf.get("crm.snapshots")  # noqa: F821 - the pipeline provides `spark`


@dlt.view
def customers_snapshot():
    return spark.read.format("json").schema("id STRING, tier STRING").load(SNAPSHOTS)  # noqa: F821


dlt.create_streaming_table("customers")
dlt.apply_changes_from_snapshot(target="customers", source="customers_snapshot", keys=["id"], stored_as_scd_type=1)

dlt.create_streaming_table("customers_history")
dlt.create_auto_cdc_from_snapshot_flow(
    target="customers_history", source="customers_snapshot", keys=["id"], stored_as_scd_type=2
)
