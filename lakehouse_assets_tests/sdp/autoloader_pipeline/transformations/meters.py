"""Databricks Auto Loader as written there: a ``cloudFiles`` JSON source outside the lakehouse,
with schema hints, a renamed rescued data column and new fields added as columns, and a table
downstream that follows them."""

import dlt


@dlt.table(comment="Meter readings as they land, every field a column.")
def raw_meters():
    return (
        spark.readStream.format("cloudFiles")  # noqa: F821 - the pipeline provides `spark`
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", "/mnt/schemas/meters")
        .option("cloudFiles.schemaEvolutionMode", "addNewColumns")
        .option("cloudFiles.schemaHints", "kwh double")
        .option("cloudFiles.rescuedDataColumn", "_rescue")
        .load(spark.conf.get("meters.landing"))  # noqa: F821
    )


@dlt.table(comment="Readings with a value, every column passed on.")
def metered():
    return dlt.read_stream("raw_meters").where("kwh IS NOT NULL")
