"""Pure transforms on small DataFrames: no stream, no Delta, no Dagster."""

from __future__ import annotations

import json
from datetime import date, datetime

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from lakehouse_assets.defs.bronze.events import parse_event_lines
from lakehouse_assets.defs.gold.hourly_revenue import hourly_revenue
from lakehouse_assets.defs.silver.events import SILVER_CUSTOMERS_SCHEMA, clean_events, to_silver_columns
from lakehouse_assets.lib.declare.expectations import (
    expect,
    expect_or_drop,
    expect_or_quarantine,
    split_by_expectations,
    with_expectation_flags,
)
from lakehouse_assets.lib.engine.writing.counting import expectation_counts


def lines_frame(spark: SparkSession, lines: list[str]):
    return spark.createDataFrame([(ln, "f.jsonl") for ln in lines], "value string, _source_file string")


def test_parse_event_lines_types_rescues_and_flags(spark: SparkSession) -> None:
    lines = [
        '{"event_id": "e1", "amount": 12.5, "event_type": "purchase"}',
        '{"event_id": "e2", "amount": "twelve", "campaign": {"id": 7}}',
        '{"event_id": "e3", "user_id": 42, "amount": null}',
        "   ",
        "",
        '{"event_id": "trunc',
        "[1, 2]",
        "42",
    ]
    parsed = parse_event_lines(lines_frame(spark, lines))
    rows = {r["raw_line"]: r for r in parsed.collect()}

    assert len(rows) == 6, "blank and whitespace-only lines carry nothing"
    e1 = rows[lines[0]]
    assert (e1["event_id"], e1["amount"], e1["_rescued_data"], e1["_is_json_object"]) == ("e1", 12.5, None, True)
    e2 = rows[lines[1]]
    assert e2["amount"] is None
    assert json.loads(e2["_rescued_data"]) == {"amount": "twelve", "campaign": {"id": 7}}
    e3 = rows[lines[2]]
    assert (e3["user_id"], e3["amount"], e3["_rescued_data"]) == ("42", None, None)
    assert [rows[ln]["_is_json_object"] for ln in lines[5:]] == [False, False, False]


def test_clean_events_types_devices_and_tiers(spark: SparkSession) -> None:
    bronze = spark.createDataFrame(
        [
            Row(event_id="a", event_time="2026-11-21T10:15:30.123Z", user_id="c1", user_agent="x Mobile y"),
            Row(event_id="b", event_time="2026-11-21T12:00:00+02:00", user_id="c2", user_agent="iPad Tablet"),
            Row(event_id="c", event_time="2026-11-21T23:59:59", user_id="c9", user_agent=None),
            Row(event_id="d", event_time="yesterday", user_id="c1", user_agent="Desktop"),
        ]
    )
    customers = spark.createDataFrame(
        [
            ("c1", "A", "a@x", "gold", "DE", datetime(2026, 1, 1), None, True),
            ("c2", "B", "b@x", "silver", "FR", datetime(2026, 1, 1), datetime(2026, 2, 1), False),
            ("c2", "B", "b@x", "platinum", "FR", datetime(2026, 2, 1), None, True),
        ],
        SILVER_CUSTOMERS_SCHEMA,
    )
    result = clean_events(bronze, customers).select(
        "event_id", "event_ts", "event_date", "device_type", "customer_tier"
    )
    expected = spark.createDataFrame(
        [
            ("a", datetime(2026, 11, 21, 10, 15, 30, 123000), date(2026, 11, 21), "mobile", "gold"),
            ("b", datetime(2026, 11, 21, 10, 0, 0), date(2026, 11, 21), "tablet", "platinum"),
            ("c", datetime(2026, 11, 21, 23, 59, 59), date(2026, 11, 21), "desktop", None),
            ("d", None, None, "desktop", "gold"),
        ],
        "event_id string, event_ts timestamp, event_date date, device_type string, customer_tier string",
    )
    assertDataFrameEqual(result, expected)


def test_event_time_accepts_iso_forms_only(spark: SparkSession) -> None:
    from lakehouse_assets.defs.silver.events import parse_event_time

    values = {
        "2026-11-21T10:15:30Z": datetime(2026, 11, 21, 10, 15, 30),
        "2026-11-21T10:15:30.5-05:00": datetime(2026, 11, 21, 15, 15, 30, 500000),
        "2026-11-21 10:15": datetime(2026, 11, 21, 10, 15),
        "2026": None,
        "2026-02-30T00:00:00Z": None,
        "21/11/2026 10:15": None,
        "": None,
    }
    df = spark.createDataFrame([(k,) for k in values], "raw string")
    got = {r["raw"]: r["ts"] for r in df.select("raw", parse_event_time(F.col("raw")).alias("ts")).collect()}
    assert got == values


def test_silver_columns_follow_the_contract(spark: SparkSession) -> None:
    bronze = spark.createDataFrame(
        [("a", "2026-11-21T10:00:00Z", "c1", "purchase", "p1", None, "/", None, 3.0)],
        "event_id string, event_time string, user_id string, event_type string, product_id string, "
        "category string, page string, user_agent string, amount double",
    )
    customers = spark.createDataFrame([], SILVER_CUSTOMERS_SCHEMA)
    silver = to_silver_columns(clean_events(bronze, customers))
    assert silver.columns == [
        "event_id", "event_time", "event_date", "user_id", "event_type", "product_id",
        "category", "amount", "page", "device_type", "customer_tier",
    ]  # fmt: skip
    assert dict(silver.dtypes)["event_time"] == "timestamp"


def test_hourly_revenue_windows_categories_and_buyers(spark: SparkSession) -> None:
    events = spark.createDataFrame(
        [
            ("purchase", datetime(2026, 11, 21, 10, 5), "books", "u1", 10.0),
            ("purchase", datetime(2026, 11, 21, 10, 55), "books", "u1", 5.0),
            ("purchase", datetime(2026, 11, 21, 10, 30), "books", "u2", 1.5),
            ("purchase", datetime(2026, 11, 21, 11, 0), None, "u3", 2.0),
            ("page_view", datetime(2026, 11, 21, 10, 10), "books", "u4", None),
        ],
        "event_type string, event_time timestamp, category string, user_id string, amount double",
    )
    expected = spark.createDataFrame(
        [
            (datetime(2026, 11, 21, 10), datetime(2026, 11, 21, 11), "books", 16.5, 3, 2),
            (datetime(2026, 11, 21, 11), datetime(2026, 11, 21, 12), "unknown", 2.0, 1, 1),
        ],
        "window_start timestamp, window_end timestamp, category string, revenue double, orders long, buyers long",
    )
    assertDataFrameEqual(hourly_revenue(events), expected)


def test_the_counting_pass_names_the_landed_files_of_stored_rows(spark: SparkSession) -> None:
    rows = [
        (1, "/l/a.jsonl"),
        (-1, "/l/b.jsonl"),
        (2, "kafka://t/0/7"),
        (3, "/l/a.jsonl"),
        (-4, "/l/c.jsonl"),
        (5, "/l/c.jsonl"),
    ]
    df = spark.createDataFrame(rows, "n int, _source_file string")
    expectations = [expect_or_drop("n_positive", "n > 0")]
    counts, files = expectation_counts(with_expectation_flags(df, expectations), expectations)
    # b.jsonl's only row was dropped (it is in no table), the Kafka message is no file
    assert counts["__rows"] == 6 and counts["__dropped"] == 2
    assert files == ["/l/a.jsonl", "/l/c.jsonl"]


def test_expectation_actions_split_rows(spark: SparkSession) -> None:
    df = spark.createDataFrame([(1, "a"), (2, None), (-1, "c"), (-2, None)], "n int, s string")
    expectations = [
        expect_or_quarantine("s_present", "s IS NOT NULL"),
        expect_or_drop("n_positive", "n > 0"),
        expect("n_small", "n < 2"),
    ]
    flagged = with_expectation_flags(df, expectations)
    # Rows 2 and -2 fail s_present (quarantined); -1 fails only n_positive (dropped); -2 also
    # fails n_positive but quarantine wins.
    assert expectation_counts(flagged, expectations) == ({
        "__rows": 4, "__quarantined": 2, "__dropped": 1, "s_present": 2, "n_positive": 2, "n_small": 1,
    }, None)  # fmt: skip
    kept, quarantined, dropped = split_by_expectations(flagged, expectations)
    assert sorted(r["n"] for r in kept.collect()) == [1]
    assert {r["n"]: sorted(r["failed_expectations"]) for r in quarantined.collect()} == {
        2: ["n_small", "s_present"],
        -2: ["n_positive", "s_present"],
    }
    assert [r["n"] for r in dropped.collect()] == [-1]
