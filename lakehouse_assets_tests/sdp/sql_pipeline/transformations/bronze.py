"""Bronze in Python: the raw files, as they came."""

from pyspark import pipelines as dp


@dp.table(comment="Orders as they came.")
def bronze_orders():
    return (
        spark.readStream.format("json")  # noqa: F821 - the pipeline provides `spark`
        .schema("order_id STRING, customer_id STRING, amount DOUBLE")
        .load(spark.conf.get("shop.landing"))  # noqa: F821
    )
