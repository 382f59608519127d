"""One bronze table of JSON lines, a file per micro-batch, with a quarantine, a dropping
expectation and two checks."""

from __future__ import annotations

from pyspark.sql import DataFrame

from lakehouse_assets.lib import (
    IS_JSON_OBJECT,
    Quarantine,
    expect_or_drop,
    expect_or_quarantine,
    landing,
    non_blank_lines,
    not_null,
    parse_json_lines,
    rows_satisfy,
    streaming_table,
)

FIELDS = {"reading_id": "string", "meter": "string", "kwh": "double"}


@streaming_table(
    group="raw",
    inputs={"lines": landing("readings", glob="*.jsonl", options={"maxFilesPerTrigger": "1"})},
    expectations=[
        expect_or_quarantine("json_object", IS_JSON_OBJECT),
        expect_or_drop("kwh_present", "kwh IS NOT NULL"),
    ],
    quarantine=Quarantine("readings_quarantine", columns=["raw_line", "_source_file"], with_failures=False),
    columns=[*FIELDS, "_source_file"],
    checks=[rows_satisfy("kwh_not_negative", "kwh >= 0", severity="WARN"), not_null("meter")],
)
def readings(lines: DataFrame) -> DataFrame:
    """One row per JSON-object line with a reading; other lines quarantined, readings without
    kWh dropped."""
    return parse_json_lines(non_blank_lines(lines).withColumnRenamed("value", "raw_line"), FIELDS, column="raw_line")
