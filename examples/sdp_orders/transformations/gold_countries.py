"""Gold: revenue per customer country, a join with the current customers (recomputed)."""

from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view(comment="Revenue per customer country (unknown without a current customer).")
def revenue_by_country():
    orders = spark.read.table("silver_orders")  # noqa: F821
    customers = spark.read.table("customers")  # noqa: F821
    return (
        orders.join(customers.select("customer_id", "country"), "customer_id", "left")
        .groupBy(F.coalesce("country", F.lit("unknown")).alias("country"))
        .agg(F.round(F.sum("amount"), 2).alias("revenue"))
    )
