"""Gold: revenue and order count per customer (maintained incrementally by key)."""

from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view(comment="Revenue and order count per customer.")
def customer_revenue():
    return (
        spark.read.table("silver_orders")  # noqa: F821
        .groupBy("customer_id")
        .agg(F.round(F.sum("amount"), 2).alias("revenue"), F.count("*").alias("orders"))
    )
