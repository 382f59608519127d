"""A corpus of landing files that tries to break ingestion. For each: the run finishes (or fails
with a clear message where failing is right), nothing valid is lost, every bad line is in a
quarantine table with its source file, and nothing outside the data root is read."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from lakehouse_assets.lib.orchestrate.markdown import escape
from verification.contract import assert_tables_match_landed_files
from verification.lakehouse import Lakehouse

CHAIN = ["bronze_events", "silver_events", "gold_hourly_revenue"]


def event(event_id: str, **fields: object) -> str:
    record = {"event_id": event_id, "event_time": "2026-11-20T10:00:00Z", "user_id": "c1",
              "event_type": "purchase", "amount": 1.0, "category": "books"} | fields  # fmt: skip
    return json.dumps(record)


# Each file's lines hug their join([...]), one line per record.
# fmt: off
CORPUS: dict[str, bytes] = {
    "garbage.jsonl": b"\n".join([b'{"event_id": "cut', b"<html>502 Bad Gateway</html>", b"{,}", b"null",
                                 event("ok-garbage-file").encode()]),
    "arrays-and-scalars.jsonl": b"\n".join([b"[1, 2]", b'[{"event_id": "in-array"}]', b"42", b'"text"', b"true"]),
    "invalid-utf8.jsonl": b"\n".join([
        event("utf8-ok", note="x").encode().replace(b'"x"', b'"caf\xe9 \xff"'),
        b"\xff\xfe\x00garbage",
    ]),
    "huge-line.jsonl": event("huge", blob="x" * 10_000_000).encode(),
    "deep.jsonl": b'{"event_id": "deep", "nested": ' + b'{"a": ' * 3000 + b"1" + b"}" * 3000 + b"}",
    "empty.jsonl": b"",
    "blank-only.jsonl": b"\n   \n\t\n\n",
    "drift.jsonl": b"\n".join([
        event("drift-new-field", brand_new={"deep": [1, 2]}).encode(),
        event("drift-amount-string", amount="12").encode(),
        event("drift-amount-object", amount={"value": 12}).encode(),
        event("drift-id-number").replace('"drift-id-number"', "12345").encode(),
    ]),
    "odd-times.jsonl": b"\n".join([
        event("t-far-past", event_time="1200-01-01T00:30:00Z").encode(),
        event("t-far-future", event_time="9999-12-31T22:30:00Z").encode(),
        event("t-nanos-offset", event_time="2026-11-20T10:15:30.123456789+05:45").encode(),
        event("t-epoch", event_time="1763633730").encode(),
        event("t-words", event_time="last tuesday").encode(),
        event("t-date-only", event_time="2026-11-20").encode(),
    ]),
    "amounts.jsonl": b"\n".join([
        event("a-negative", amount=-5).encode(),
        event("a-huge", amount=1e300).encode(),
        event("a-zero", amount=0).encode(),
        event("a-null", amount=None).encode(),
        event("a-bool", amount=True).encode(),
    ]),
}
# fmt: on


@pytest.fixture(scope="module")
def ingested(module_lakehouse: Lakehouse, tmp_path_factory: pytest.TempPathFactory) -> Lakehouse:
    lh = module_lakehouse
    folder = lh.landing("events")
    for name, data in CORPUS.items():
        (folder / name).write_bytes(data)
    (folder / "compressed.jsonl.gz").write_bytes(gzip.compress((event("gz-ok") + "\n[]\n").encode()))
    (folder / "_still-writing.jsonl").write_bytes(event("in-progress").encode())
    outside = tmp_path_factory.mktemp("outside") / "secret.jsonl"
    outside.write_text(event("from-outside") + "\n")
    (folder / "link-outside.jsonl").symlink_to(outside)
    lh.outside_file = outside  # type: ignore[attr-defined]
    (folder / "folder-named-like-data.jsonl").mkdir()  # Spark does not read into it
    (folder / "folder-named-like-data.jsonl" / "inside.jsonl").write_text(event("inside-a-folder") + "\n")
    result = lh.materialize(CHAIN)
    assert result.success
    lh.result = result  # type: ignore[attr-defined]
    return lh


def ids(lh: Lakehouse, table: str) -> set[str]:
    return {r[0] for r in lh.table(table).select("event_id").collect()}


def test_every_landed_line_is_accounted_for(ingested: Lakehouse) -> None:
    assert_tables_match_landed_files(ingested)


def test_bad_lines_are_quarantined_with_their_file(ingested: Lakehouse) -> None:
    rows = ingested.table("bronze_events_quarantine").collect()
    by_file: dict[str, set[str]] = {}
    for r in rows:
        by_file.setdefault(Path(r["_source_file"]).name, set()).add(r["raw_line"])
    assert by_file["arrays-and-scalars.jsonl"] == {"[1, 2]", '[{"event_id": "in-array"}]', "42", '"text"', "true"}
    assert len(by_file["garbage.jsonl"]) == 4
    assert by_file["compressed.jsonl.gz"] == {"[]"}
    assert "deep.jsonl" in by_file, "nesting beyond the parser's limit is a bad line, not a crash"


def test_valid_records_survive_drift_and_odd_bytes(ingested: Lakehouse) -> None:
    bronze = {r["event_id"]: r for r in ingested.table("bronze_events").collect()}
    assert {"ok-garbage-file", "utf8-ok", "huge", "gz-ok", "drift-new-field", "12345"} <= set(bronze)
    assert json.loads(bronze["drift-new-field"]["_rescued_data"]) == {"brand_new": {"deep": [1, 2]}}
    assert json.loads(bronze["drift-amount-object"]["_rescued_data"]) == {"amount": {"value": 12}}
    assert len(json.loads(bronze["huge"]["_rescued_data"])["blob"]) == 10_000_000
    assert "caf" in json.loads(bronze["utf8-ok"]["_rescued_data"])["note"]


def test_odd_timestamps_and_amounts_pass_or_fail_expectations(ingested: Lakehouse) -> None:
    silver = ids(ingested, "silver_events")
    assert {"t-far-past", "t-far-future", "t-nanos-offset", "a-huge", "a-zero"} <= silver
    failed = {r["event_id"]: r["failed_expectations"] for r in ingested.table("silver_events_quarantine").collect()}
    assert failed["t-epoch"] == failed["t-words"] == failed["t-date-only"] == ["event_time_valid"]
    for amount_case in ("a-negative", "a-null", "a-bool", "drift-amount-string", "drift-amount-object"):
        assert failed[amount_case] == ["purchase_amount_valid"], amount_case


def test_nothing_outside_the_data_root_is_read(ingested: Lakehouse) -> None:
    assert "from-outside" not in ids(ingested, "bronze_events")
    assert "in-progress" not in ids(ingested, "bronze_events")
    assert (ingested.landing("events") / "_set_aside" / "link-outside.jsonl").is_symlink()


def test_a_folder_in_the_landing_folder_is_not_skipped_without_a_word(ingested: Lakehouse) -> None:
    assert "inside-a-folder" not in ids(ingested, "bronze_events")
    run_id = ingested.result.run_id  # type: ignore[attr-defined]
    warned = [
        e.user_message for e in ingested.instance.all_logs(run_id)
        if e.level == logging.WARNING and "folder-named-like-data.jsonl/" in e.user_message
    ]  # fmt: skip
    assert len(warned) == 1, warned
    assert "will not be ingested" in warned[0] and "folders are not read" in warned[0]
    bronze = ingested.result.asset_materializations_for_node("bronze_events")  # type: ignore[attr-defined]
    metadata = next(m.metadata for m in bronze if m.asset_key.to_user_string() == "bronze_events")
    assert escape("folder-named-like-data.jsonl/") in metadata["warnings"].value


def test_a_corrupt_gzip_is_set_aside_and_the_rest_flows_in_the_same_run(lakehouse: Lakehouse) -> None:
    folder = lakehouse.landing("events")
    (folder / "good.jsonl").write_text(event("before-corrupt") + "\n")
    assert lakehouse.materialize(["bronze_events"]).success
    whole = gzip.compress(((event("corrupt-1") + "\n") * 2000).encode())
    (folder / "corrupt.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    (folder / "fine.jsonl").write_text(event("after-corrupt") + "\n")
    result = lakehouse.materialize(["bronze_events"])
    assert result.success
    assert ids(lakehouse, "bronze_events") == {"before-corrupt", "after-corrupt"}
    aside = lakehouse.table("bronze_events_quarantine").where("_set_aside_reason IS NOT NULL").collect()
    assert [Path(r["_source_file"]).name for r in aside] == ["corrupt.jsonl.gz"]
    # Every compressed file is read ahead, so a truncated one is set aside before the query.
    assert "not a readable gzip file" in aside[0]["_set_aside_reason"]
    assert (folder / "_set_aside" / "corrupt.jsonl.gz").exists() and not (folder / "corrupt.jsonl.gz").exists()
