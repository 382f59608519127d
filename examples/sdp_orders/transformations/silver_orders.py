"""Silver orders: both shops' orders in one table, an append flow each."""

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
