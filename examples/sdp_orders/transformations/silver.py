"""Silver: both shops' orders in one table (an append flow each), customers as SCD1 and SCD2."""

from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.temporary_view
def valid_eu_orders():
    return spark.readStream.table("bronze_orders_eu").where("order_id IS NOT NULL AND amount > 0")  # noqa: F821


dp.create_streaming_table("silver_orders", comment="Valid orders of both shops, with their region.")


@dp.append_flow(target="silver_orders")
def eu_orders():
    return spark.readStream.table("valid_eu_orders").withColumn("region", F.lit("EU"))  # noqa: F821


@dp.append_flow(target="silver_orders")
def us_orders():
    return (
        spark.readStream.table("bronze_orders_us")  # noqa: F821
        .where("order_id IS NOT NULL AND amount > 0")
        .withColumn("region", F.lit("US"))
    )


# Both customer tables apply the same change feed; only how they store it differs.
CUSTOMER_CHANGES = dict(
    source="bronze_customer_changes",
    keys=["customer_id"],
    sequence_by="updated_at",
    apply_as_deletes="op = 'DELETE'",
    except_column_list=["op"],
)

dp.create_streaming_table("customers", comment="Each customer's latest details (SCD type 1).")
dp.create_auto_cdc_flow(target="customers", stored_as_scd_type=1, **CUSTOMER_CHANGES)

dp.create_streaming_table("customers_history", comment="Every customer's tier and country over time (SCD type 2).")
dp.create_auto_cdc_flow(
    target="customers_history", stored_as_scd_type=2, track_history_column_list=["tier", "country"], **CUSTOMER_CHANGES
)
