"""Databricks Auto Loader over CSV exports as written there: a header row, typed inference, and
files whose columns come in any order or add new ones, each read by its own header's names."""

import dlt


@dlt.table(comment="Meter sites as exported, every header column a column.")
def raw_sites():
    return (
        spark.readStream.format("cloudFiles")  # noqa: F821 - the pipeline provides `spark`
        .option("cloudFiles.format", "csv")
        .option("header", "true")
        .option("cloudFiles.inferColumnTypes", "true")
        .option("cloudFiles.schemaHints", "meter string")
        .load(spark.conf.get("sites.landing"))  # noqa: F821
    )
