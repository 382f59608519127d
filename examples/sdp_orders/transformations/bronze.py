"""Bronze: every file the shops land, as it came."""

from pyspark import pipelines as dp

LANDING = spark.conf.get("orders.landing")  # noqa: F821 - spark-pipelines provides `spark`

ORDER_SCHEMA = "order_id STRING, customer_id STRING, amount DOUBLE, ordered_at TIMESTAMP"
CUSTOMER_SCHEMA = "customer_id STRING, name STRING, tier STRING, country STRING, updated_at TIMESTAMP, op STRING"


@dp.table(comment="Orders landed by the EU shop, as they came.")
def bronze_orders_eu():
    return spark.readStream.format("json").schema(ORDER_SCHEMA).load(f"{LANDING}/orders_eu")  # noqa: F821


@dp.table(comment="Orders landed by the US shop, as they came.")
def bronze_orders_us():
    return spark.readStream.format("json").schema(ORDER_SCHEMA).load(f"{LANDING}/orders_us")  # noqa: F821


@dp.table(comment="Customer changes (upserts and deletes) from the CRM, in landing order.")
def bronze_customer_changes():
    return spark.readStream.format("json").schema(CUSTOMER_SCHEMA).load(f"{LANDING}/customers")  # noqa: F821
