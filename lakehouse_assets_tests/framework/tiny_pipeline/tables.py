"""The tiny pipeline's tables, declared with the framework's public API only."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.lib import (
    IS_JSON_OBJECT,
    CheckOutcome,
    Quarantine,
    change_feed,
    custom_check,
    expect_or_drop,
    expect_or_quarantine,
    landing,
    non_blank_lines,
    not_null,
    parse_json_lines,
    recompute,
    rows_satisfy,
    streaming_table,
    unique,
)

FIELDS = {"reading_id": "string", "meter": "string", "kwh": "double"}


def meters_lowercase(rows: DataFrame) -> CheckOutcome:
    """A check of the pipeline's own: meter names arrive in lower case."""
    shouting = rows.where("meter <> lower(meter)").count()
    return CheckOutcome(shouting == 0, {"meters_not_lowercase": shouting})


def no_negative_reading(rows: DataFrame) -> bool:
    """The same promise as ``kwh_not_negative``, written as a bare assert: a failed assert fails
    the check (it does not crash the step)."""
    assert rows.where("kwh < 0").isEmpty()  # the point of this check
    return True


@streaming_table(
    group="raw",
    inputs={"lines": landing("readings", glob="*.jsonl")},
    expectations=[
        expect_or_quarantine("json_object", IS_JSON_OBJECT),
        expect_or_drop("kwh_present", "kwh IS NOT NULL"),
    ],
    quarantine=Quarantine("readings_quarantine", columns=["raw_line", "_source_file"], with_failures=False),
    columns=[*FIELDS, "_source_file"],
    checks=[
        rows_satisfy("kwh_not_negative", "kwh >= 0", severity="WARN"),
        custom_check("meters_lowercase", meters_lowercase, description="Meter names are lower case.", severity="WARN"),
        custom_check("asserts_no_negative", no_negative_reading, description="No negative kWh.", severity="WARN"),
    ],
)
def readings(lines: DataFrame) -> DataFrame:
    """One row per JSON-object line with a reading; other lines quarantined, readings without
    kWh dropped."""
    return parse_json_lines(non_blank_lines(lines).withColumnRenamed("value", "raw_line"), FIELDS, column="raw_line")


@streaming_table(
    group="totals",
    inputs={"readings": change_feed("readings")},
    sink=recompute(keys=["meter"], reread_by="meter"),
    checks=[unique("meter"), not_null("meter", "kwh", "readings")],
)
def meter_totals(readings: DataFrame) -> DataFrame:
    """Total kWh and number of readings per meter, exact after every run."""
    return readings.groupBy("meter").agg(F.sum("kwh").alias("kwh"), F.count(F.lit(1)).alias("readings"))
