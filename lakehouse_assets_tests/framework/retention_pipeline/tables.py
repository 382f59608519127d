"""Two bronze tables of JSON lines, one per retention mode, each with a quarantine."""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame

from lakehouse_assets.lib import (
    IS_JSON_OBJECT,
    Quarantine,
    expect_or_quarantine,
    landing,
    non_blank_lines,
    parse_json_lines,
    streaming_table,
)

FIELDS = {"reading_id": "string", "kwh": "double"}


def _parsed(lines: DataFrame) -> DataFrame:
    return parse_json_lines(non_blank_lines(lines).withColumnRenamed("value", "raw_line"), FIELDS, column="raw_line")


def _quarantine(name: str) -> Quarantine:
    return Quarantine(name, columns=["raw_line", "_source_file"], with_failures=False)


@streaming_table(
    group="raw",
    inputs={"lines": landing("archived", glob="*.jsonl*", clean_source="archive", retention="30 days")},
    expectations=[expect_or_quarantine("json_object", IS_JSON_OBJECT)],
    quarantine=_quarantine("archived_quarantine"),
    columns=[*FIELDS, "_source_file"],
)
def archived(lines: DataFrame) -> DataFrame:
    """Readings whose landed files move into ``archive/archived`` once committed."""
    return _parsed(lines)


# A compact file of Spark's log every second source batch (Spark's default: 10), so the kills
# meet the intake dropping cleaned files' entries from it (engine/intake/forgetting.py).
archived = replace(archived, spark_conf={"spark.sql.streaming.fileSource.log.compactInterval": "2"})


@streaming_table(
    group="raw",
    inputs={"lines": landing("deleted", glob="*.jsonl*", clean_source="delete", retention="0 minutes")},
    expectations=[expect_or_quarantine("json_object", IS_JSON_OBJECT)],
    quarantine=_quarantine("deleted_quarantine"),
    columns=[*FIELDS, "_source_file"],
)
def deleted(lines: DataFrame) -> DataFrame:
    """Readings whose landed files are deleted once committed."""
    return _parsed(lines)
