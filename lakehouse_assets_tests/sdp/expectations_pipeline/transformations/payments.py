"""A Lakeflow-style pipeline: pyspark.pipelines plus expectations, through lakehouse_assets.lib.dp."""

from pyspark.sql import functions as F

from lakehouse_assets.lib import dp


@dp.table
@dp.expect("has_note", "note IS NOT NULL")
@dp.expect_or_drop("positive_amount", "amount > 0")
@dp.expect_or_quarantine("known_currency", "currency IN ('EUR', 'USD')")
def payments():
    return (
        spark.readStream.format("json")  # noqa: F821
        .schema("payment_id STRING, amount DOUBLE, currency STRING, note STRING")
        .load(spark.conf.get("payments.landing"))  # noqa: F821
    )


@dp.materialized_view
@dp.expect_all_or_fail({"below_limit": "total < 1000000"})
def totals():
    return spark.read.table("payments").groupBy("currency").agg(F.sum("amount").alias("total"))  # noqa: F821
