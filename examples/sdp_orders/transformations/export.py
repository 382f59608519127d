"""Export: every valid order, as it arrives, to the Delta table finance reads (a sink)."""

from pyspark import pipelines as dp

dp.create_sink("orders_export", "delta", {"path": spark.conf.get("orders.export")})  # noqa: F821


@dp.append_flow(target="orders_export")
def export_orders():
    return spark.readStream.table("silver_orders").select("order_id", "customer_id", "amount", "region")  # noqa: F821
