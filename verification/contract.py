"""Assertions of the lakehouse contract for the events tables, shared by several tests."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from verification.expected import (
    ExpectedEvents,
    close,
    expected_history,
    file_lines,
    history_rows,
    is_number,
    landed_files,
    parse_time,
    scd2_row,
)
from verification.lakehouse import Lakehouse
from verification.runs import assert_events_exact

SET_ASIDE_REASON = "_set_aside_reason"


def stored_lines(lh: Lakehouse, table: str) -> DataFrame:
    """The table's rows that hold a landed line: a quarantine's row naming a file set aside
    whole (``_set_aside_reason``) holds none."""
    rows = lh.table(table)
    return rows.where(F.col(SET_ASIDE_REASON).isNull()) if SET_ASIDE_REASON in rows.columns else rows


def bronze_by_file(lh: Lakehouse, table: str) -> Counter:
    rows = stored_lines(lh, table).select("_source_file").collect()
    return Counter(Path(r[0].removeprefix("file:")).name for r in rows)


def assert_tables_match_landed_files(lh: Lakehouse) -> ExpectedEvents:
    expected = ExpectedEvents(lh.root)
    # Bronze: every non-blank line of every complete file is in the table or its quarantine.
    kept, bad = bronze_by_file(lh, "bronze_events"), bronze_by_file(lh, "bronze_events_quarantine")
    assert {f: kept[f] + bad[f] for f in expected.lines_per_file} == expected.lines_per_file
    with_lines = {f for f, n in expected.lines_per_file.items() if n}
    assert set(kept) | set(bad) == with_lines, "in-progress or hidden files were read"
    bronze_ids = Counter(r["event_id"] for r in lh.table("bronze_events").select("event_id").collect())
    assert bronze_ids == Counter(r.get("event_id") if isinstance(r.get("event_id"), str) else
                                 (None if r.get("event_id") is None else str(r.get("event_id")))
                                 for r in expected.bronze)  # fmt: skip
    quarantined_lines = Counter(r["raw_line"] for r in stored_lines(lh, "bronze_events_quarantine").collect())
    assert quarantined_lines == Counter(line for line, _ in expected.bad_lines)

    # Silver: exactly one row per valid event_id, typed.
    silver = {r["event_id"]: r for r in lh.table("silver_events").collect()}
    assert set(silver) == set(expected.silver)
    assert len(silver) == lh.table("silver_events").count()
    for event_id, record in expected.silver.items():
        row = silver[event_id]
        assert row["event_time"] == parse_time(record["event_time"])
        assert row["event_date"] == row["event_time"].date()
        amount = record.get("amount")
        assert row["amount"] == (float(amount) if is_number(amount) else None)
        agent = record.get("user_agent") or ""
        assert row["device_type"] == ("mobile" if "Mobile" in agent else "tablet" if "Tablet" in agent else "desktop")
        assert row["customer_tier"] is None

    # Silver quarantine: every bronze row failing an expectation, with the names it failed.
    got = Counter(
        (r["event_id"], tuple(sorted(r["failed_expectations"]))) for r in lh.table("silver_events_quarantine").collect()
    )
    want = Counter(
        (str(r.get("event_id")) if r.get("event_id") is not None else None, tuple(sorted(expected.failures(r))))
        for r in expected.quarantined
    )
    assert got == want

    # Gold: exactly the aggregation of silver's purchases.
    gold = {(r["window_start"], r["category"]): r for r in lh.table("gold_hourly_revenue").collect()}
    answer = expected.hourly_revenue()
    assert set(gold) == set(answer)
    for key, (revenue, orders, buyers) in answer.items():
        row = gold[key]
        assert close(row["revenue"], revenue) and (row["orders"], row["buyers"]) == (orders, buyers), key
        assert (row["window_end"] - row["window_start"]).total_seconds() == 3600
    return expected


def assert_every_source_exact(lh: Lakehouse) -> None:
    """Every source's tables hold exactly what its landed files hold: the events chain to gold,
    ``silver_customers``' SCD2 history, and each ad source's rows (kept or quarantined) by file."""
    assert_events_exact(lh.spark, lh.root)
    history, _, _ = expected_history(lh.root)
    customers = Counter(scd2_row(r) for r in lh.table("silver_customers").collect())
    assert customers == history_rows(history), "silver_customers is not the SCD2 history of the landed files"
    for source in ("ad_impressions", "ad_clicks"):
        landed = {f.name: sum(1 for line in file_lines(f) if line.strip()) for f in landed_files(lh.root, source)}
        held = bronze_by_file(lh, f"bronze_{source}") + bronze_by_file(lh, f"bronze_{source}_quarantine")
        assert dict(held) == landed, f"bronze_{source} holds {dict(held)}, the files {landed}"


def table_history(lh: Lakehouse) -> dict[str, list[tuple]]:
    """``silver_customers`` as SCD2 rows per customer, in the form ``expected_history`` gives."""
    rows = lh.table("silver_customers").collect()
    history: dict[str, list[tuple]] = {}
    for r in sorted(rows, key=lambda r: (r["customer_id"], r["valid_from"])):
        history.setdefault(r["customer_id"], []).append(scd2_row(r))
    return history
