"""CDC into SCD type 2 (and 1): the pure history builder, and silver_customers materialized
over several runs of a messy customers feed (out-of-order, re-delivered, deletes followed by
re-inserts, malformed CSV, invalid changes), compared with an answer computed in plain Python."""

from __future__ import annotations

import csv
import gzip
import io
from datetime import datetime

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from lakehouse_assets.lib.declare.cdc import scd1_current, scd2_history
from lakehouse_assets.lib.orchestrate.metadata import NO_CHANGE
from verification.contract import table_history
from verification.expected import expected_history, landed_files, parse_time
from verification.lakehouse import Lakehouse

HEADER = "customer_id,name,email,tier,country,op,updated_at"
CHAIN = ["bronze_customers", "silver_customers"]
TRACKED = ["name", "email", "tier", "country"]


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


# -- pure: the history builder ---------------------------------------------------------------

CHANGE_SCHEMA = "id string, name string, tier string, op string, at timestamp"


def test_scd2_history_orders_by_sequence_not_arrival(spark: SparkSession) -> None:
    changes = spark.createDataFrame(
        [
            ("a", "Ada", "gold", "upsert", ts("2026-01-03 00:00")),  # arrives first, is newest
            ("a", "Ada", "silver", "upsert", ts("2026-01-01 00:00")),
            ("a", "Ada", "silver", "upsert", ts("2026-01-01 00:00")),  # re-delivered
            ("a", "Ada", "silver", "upsert", ts("2026-01-02 00:00")),  # changes nothing
            ("b", "Bo", "gold", "upsert", ts("2026-01-01 00:00")),
            ("b", None, None, "delete", ts("2026-01-02 00:00")),
            ("b", None, None, "delete", ts("2026-01-02 12:00")),  # nothing left to close
            ("b", "Bo", "gold", "upsert", ts("2026-01-03 00:00")),  # re-insert, same values
            ("c", None, None, "delete", ts("2026-01-01 00:00")),  # delete of an unknown key
            ("d", "Di", None, "upsert", ts("2026-01-01 00:00")),
            ("d", "Di", None, "upsert", ts("2026-01-02 00:00")),  # nulls compare equal
            ("d", "Di", "gold", "upsert", ts("2026-01-02 00:00")),  # tie on sequence: greatest wins
        ],
        CHANGE_SCHEMA,
    )
    history = scd2_history(changes, ["id"], "at", ["name", "tier"], "op = 'delete'")
    expected = spark.createDataFrame(
        [
            ("a", "Ada", "silver", ts("2026-01-01 00:00"), ts("2026-01-03 00:00"), False),
            ("a", "Ada", "gold", ts("2026-01-03 00:00"), None, True),
            ("b", "Bo", "gold", ts("2026-01-01 00:00"), ts("2026-01-02 00:00"), False),
            ("b", "Bo", "gold", ts("2026-01-03 00:00"), None, True),
            ("d", "Di", None, ts("2026-01-01 00:00"), ts("2026-01-02 00:00"), False),
            ("d", "Di", "gold", ts("2026-01-02 00:00"), None, True),
        ],
        "id string, name string, tier string, valid_from timestamp, valid_to timestamp, is_current boolean",
    )
    assertDataFrameEqual(history, expected)


def test_scd2_untracked_columns_follow_the_latest_upsert(spark: SparkSession) -> None:
    changes = spark.createDataFrame(
        [
            ("a", "Ada", "gold", "upsert", ts("2026-01-01 00:00")),
            ("a", "Ada Lovelace", "gold", "upsert", ts("2026-01-02 00:00")),  # untracked: in place
            ("a", "Ada Lovelace", "platinum", "upsert", ts("2026-01-03 00:00")),
        ],
        CHANGE_SCHEMA,
    )
    history = scd2_history(changes, ["id"], "at", ["tier"], "op = 'delete'", columns=["name", "tier"])
    expected = spark.createDataFrame(
        [
            ("a", "Ada Lovelace", "gold", ts("2026-01-01 00:00"), ts("2026-01-03 00:00"), False),
            ("a", "Ada Lovelace", "platinum", ts("2026-01-03 00:00"), None, True),
        ],
        "id string, name string, tier string, valid_from timestamp, valid_to timestamp, is_current boolean",
    )
    assertDataFrameEqual(history, expected)


def test_scd1_keeps_the_latest_change_and_drops_deleted_keys(spark: SparkSession) -> None:
    changes = spark.createDataFrame(
        [
            ("a", "Ada", "gold", "upsert", ts("2026-01-03 00:00")),
            ("a", "Ada", "silver", "upsert", ts("2026-01-01 00:00")),
            ("b", "Bo", "gold", "upsert", ts("2026-01-01 00:00")),
            ("b", None, None, "delete", ts("2026-01-02 00:00")),
            ("c", None, None, "delete", ts("2026-01-01 00:00")),
            ("c", "Cy", "bronze", "upsert", ts("2026-01-02 00:00")),
        ],
        CHANGE_SCHEMA,
    )
    current = scd1_current(changes, ["id"], "at", ["name", "tier"], "op = 'delete'")
    expected = spark.createDataFrame(
        [("a", "Ada", "gold", ts("2026-01-03 00:00")), ("c", "Cy", "bronze", ts("2026-01-02 00:00"))],
        "id string, name string, tier string, at timestamp",
    )
    assertDataFrameEqual(current, expected)


# -- materialized: a messy feed over three runs ------------------------------------------------

ROUND_ONE = f"""{HEADER}
c1,"Lovelace, Ada",ada@example.com,silver,GB,upsert,2026-01-05T10:00:00Z
c1,"Lovelace, Ada",ada@example.com,gold,GB,upsert,2026-01-07T10:00:00Z
c2,"Hopper, ""Amazing"" Grace",grace@example.com,gold,US,upsert,2026-01-05T10:00:00+02:00
c3,Linus,linus@example.com,bronze,FI,upsert,2026-01-05T10:00:00Z
c3,,,,,delete,2026-01-06T10:00:00Z
c4,Barbara,barbara@example.com,silver,US,upsert,2026-01-05T10:00:00Z
c4,Barbara,barbara@example.com,silver,US,upsert,2026-01-06T10:00:00Z
,Nobody,nobody@example.com,gold,DE,upsert,2026-01-05T10:00:00Z
c5,Eve,eve@example.com,gold,DE,merge,2026-01-05T10:00:00Z
c6,Mallory,mallory@example.com,gold,DE,upsert,last tuesday
c7,too,few,fields
c8,a,b,c,d,upsert,2026-01-05T10:00:00Z,extra

"""

# Older changes arriving after newer ones, re-deliveries, a re-insert after the delete.
ROUND_TWO = f"""{HEADER}
c1,"Lovelace, Ada",ada@example.com,bronze,GB,upsert,2026-01-06T10:00:00Z
c1,"Lovelace, Ada",ada@example.com,gold,GB,upsert,2026-01-07T10:00:00Z
c2,"Hopper, ""Amazing"" Grace",grace@example.com,gold,US,upsert,2026-01-05T10:00:00+02:00
c3,Linus,linus@example.com,bronze,FI,upsert,2026-01-08T10:00:00Z
c4,Barbara,barbara@example.com,platinum,US,upsert,2026-01-05T12:00:00Z
c9,"Multi
Line",multi@example.com,gold,BR,upsert,2026-01-05T10:00:00Z
"""

ROUND_THREE = f"""{HEADER}
c1,"Lovelace, Ada",ada@example.com,silver,GB,upsert,2026-01-05T10:00:00Z
c2,,,,,delete,2026-01-09T10:00:00Z
c3,,,,,delete,2026-01-07T10:00:00Z
"""


def land(lh: Lakehouse, name: str, text: str, compress: bool = False) -> None:
    folder = lh.landing("customers")
    temp = folder / f"_{name}"
    data = text.encode()
    temp.write_bytes(gzip.compress(data) if compress else data)
    temp.rename(folder / (name + (".gz" if compress else "")))


@pytest.fixture(scope="module")
def cdc_runs(module_lakehouse: Lakehouse) -> dict:
    lh = module_lakehouse
    snapshots = {}
    for number, (name, text, compress) in enumerate(
        [("round-1.csv", ROUND_ONE, False), ("round-2.csv", ROUND_TWO, True), ("round-3.csv", ROUND_THREE, False)],
        start=1,
    ):
        land(lh, name, text, compress)
        if number == 1:
            (lh.landing("customers") / "_in-progress.csv").write_text(
                f"{HEADER}\nzz,In,progress,x,y,upsert,2026-01-01T00:00:00Z\n"
            )
        result = lh.materialize(CHAIN)
        assert result.success
        expected, _n_valid, _n_bad = expected_history(lh.root)
        snapshots[number] = (table_history(lh), expected, lh.table("silver_customers").count())
    return {"lh": lh, "snapshots": snapshots}


@pytest.mark.slow
@pytest.mark.parametrize("run", [1, 2, 3])
def test_silver_customers_equals_the_history_of_the_changes_landed(cdc_runs: dict, run: int) -> None:
    actual, expected, count = cdc_runs["snapshots"][run]
    assert actual == expected
    assert count == sum(len(v) for v in expected.values())


@pytest.mark.slow
def test_history_points_of_the_scenario(cdc_runs: dict) -> None:
    """The cases the scenario was built for, spelled out on the final table."""
    actual, _, _ = cdc_runs["snapshots"][3]
    # c1: silver (05), bronze (06, arrived in run 2), gold (07); re-deliveries add nothing.
    assert [v[1][2] for v in actual["c1"]] == ["silver", "bronze", "gold"]
    assert actual["c1"][-1][2:] == (datetime(2026, 1, 7, 10), None, True)
    # c2: the offset is normalized to UTC, the delete of run 3 closes the only version.
    assert actual["c2"] == [
        ("c2", ('Hopper, "Amazing" Grace', "grace@example.com", "gold", "US"),
         datetime(2026, 1, 5, 8), datetime(2026, 1, 9, 10), False)
    ]  # fmt: skip
    # c3: upsert, delete, re-insert (run 2); the delete re-delivered in run 3 with another
    # updated_at (07) falls between and changes nothing that was not already closed.
    assert [(v[2], v[3]) for v in actual["c3"]] == [
        (datetime(2026, 1, 5, 10), datetime(2026, 1, 6, 10)),
        (datetime(2026, 1, 8, 10), None),
    ]
    # c4: a no-op upsert on 06 and a late change on 05T12 that arrives after it.
    assert [(v[1][2], v[2], v[3]) for v in actual["c4"]] == [
        ("silver", datetime(2026, 1, 5, 10), datetime(2026, 1, 5, 12)),
        ("platinum", datetime(2026, 1, 5, 12), datetime(2026, 1, 6, 10)),
        ("silver", datetime(2026, 1, 6, 10), None),
    ]
    assert actual["c9"][0][1][0] == "Multi\nLine"
    assert {"c5", "c6", "c7", "c8", "zz"}.isdisjoint(actual)


@pytest.mark.slow
def test_bad_records_and_invalid_changes_are_kept_not_fatal(cdc_runs: dict) -> None:
    lh = cdc_runs["lh"]
    _, _n_valid, n_bad = expected_history(lh.root)
    bronze = lh.table("bronze_customers").count()
    malformed = [r["raw_line"] for r in lh.table("bronze_customers_quarantine").collect()]
    assert sorted(malformed) == ["c7,too,few,fields", "c8,a,b,c,d,upsert,2026-01-05T10:00:00Z,extra"]
    invalid = {r["customer_id"]: r["failed_expectations"] for r in lh.table("silver_customers_quarantine").collect()}
    assert invalid == {None: ["customer_id_present"], "c5": ["op_known"], "c6": ["updated_at_valid"]}
    # Conservation: every CSV record is in bronze or its quarantine; every bronze row is a
    # valid change or in silver's quarantine.
    assert bronze + len(malformed) == n_valid_records(lh) + n_bad
    assert bronze == n_valid_records(lh) + len(invalid)


def n_valid_records(lh: Lakehouse) -> int:
    total = 0
    for path in landed_files(lh.root, "customers"):
        data = path.read_bytes()
        text = (gzip.decompress(data) if path.name.endswith(".gz") else data).decode()
        rows = [r for r in list(csv.reader(io.StringIO(text)))[1:] if r]
        for row in rows:
            if len(row) != 7:
                continue
            cid, op, at = row[0], row[5], parse_time(row[6])
            total += bool(cid.strip()) and op in ("upsert", "delete") and at is not None
    return total


@pytest.mark.slow
def test_a_run_without_new_changes_writes_nothing(cdc_runs: dict) -> None:
    lh = cdc_runs["lh"]
    before = table_history(lh)
    result = lh.materialize(CHAIN)
    assert result.success
    assert table_history(lh) == before
    events = [
        e for e in result.get_asset_materialization_events() if e.asset_key.to_user_string() == "silver_customers"
    ]
    metadata = events[0].materialization.metadata
    assert metadata["change"].value == NO_CHANGE and "rows_written" not in metadata


@pytest.mark.slow
def test_full_refresh_rebuilds_the_same_history(cdc_runs: dict) -> None:
    lh = cdc_runs["lh"]
    before = table_history(lh)
    quarantined = sorted(map(str, lh.table("silver_customers_quarantine").select("customer_id", "op").collect()))
    config = {"ops": {"silver_customers": {"config": {"full_refresh": True}}}}
    assert lh.materialize(["silver_customers"], run_config=config).success
    assert table_history(lh) == before == expected_history(lh.root)[0]
    assert (
        sorted(map(str, lh.table("silver_customers_quarantine").select("customer_id", "op").collect())) == quarantined
    )
