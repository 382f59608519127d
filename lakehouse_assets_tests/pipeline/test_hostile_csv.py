"""Hostile CSV in the customers change feed: malformed records are quarantined with their file,
nothing valid is lost, and a file whose header does not match the declared columns stops the
run with one clear message naming it (mapping its columns by position would silently put
values in the wrong columns) until it is removed, after which the next run goes on."""

from __future__ import annotations

import re

import gzip
from collections import Counter
from pathlib import Path

import pytest

from lakehouse_assets_tests.support.lakehouse import Lakehouse
from lakehouse_assets_tests.support.expected import expected_history

HEADER = "customer_id,name,email,tier,country,op,updated_at"
RECORD = "{id},Ann,{id}@example.com,gold,US,upsert,2026-01-05T10:00:00Z"
BRONZE = ["bronze_customers", "bronze_customers_quarantine", "silver_customers"]

# file -> (text, ids that must reach bronze_customers, raw lines that must be quarantined)
QUARANTINED: dict[str, tuple[str, set[str], list[str]]] = {
    "unbalanced-quote.csv": (
        # An opening quote that never closes swallows the rest of the file into one field: the
        # record then has too few fields and is quarantined with all that text (u2 and u3 are
        # not lost: they are in its raw_line).
        f'{HEADER}\n{RECORD.format(id="u1")}\nu2,"Unclosed,u2@example.com,gold,US,upsert,2026-01-05T10:00:00Z\n'
        f'{RECORD.format(id="u3")}\n',
        {"u1"},
        ['u2,"Unclosed,u2@example.com,gold,US,upsert,2026-01-05T10:00:00Z\n' + RECORD.format(id="u3")],
    ),
    "extra-and-missing-fields.csv": (
        f"{HEADER}\n{RECORD.format(id='f1')},surplus\nf2,Bo,f2@example.com\n{RECORD.format(id='f3')}\n",
        {"f3"},
        [f"{RECORD.format(id='f1')},surplus", "f2,Bo,f2@example.com"],
    ),
    "crlf-and-blank-lines.csv": (
        f"{HEADER}\r\n\r\n{RECORD.format(id='w1')}\r\n\r\n{RECORD.format(id='w2')}\r\n",
        {"w1", "w2"},
        [],
    ),
    "header-only.csv": (f"{HEADER}\n", set(), []),
    "empty.csv": ("", set(), []),
    "byte-order-mark.csv": (f"\ufeff{HEADER}\n{RECORD.format(id='b1')}\n", {"b1"}, []),
    "header-in-other-case.csv": (f"{HEADER.upper()}\n{RECORD.format(id='k1')}\n", {"k1"}, []),
}


@pytest.fixture(scope="module")
def ingested(module_lakehouse: Lakehouse) -> Lakehouse:
    folder = module_lakehouse.landing("customers")
    for name, (text, _, _) in QUARANTINED.items():
        (folder / name).write_text(text, newline="")
    (folder / "compressed.csv.gz").write_bytes(gzip.compress(f"{HEADER}\n{RECORD.format(id='z1')}\n".encode()))
    assert module_lakehouse.materialize(BRONZE).success
    return module_lakehouse


def test_malformed_records_are_quarantined_with_their_file(ingested: Lakehouse) -> None:
    got = Counter((Path(r["_source_file"]).name, r["raw_line"]) for r in ingested.table("bronze_customers_quarantine").collect())
    want = Counter((name, line) for name, (_, _, lines) in QUARANTINED.items() for line in lines)
    assert got == want


def test_valid_records_are_all_kept(ingested: Lakehouse) -> None:
    got = Counter((Path(r["_source_file"]).name, r["customer_id"]) for r in ingested.table("bronze_customers").collect())
    want = Counter((name, i) for name, (_, ids, _) in QUARANTINED.items() for i in ids)
    want[("compressed.csv.gz", "z1")] += 1
    assert got == want
    history, _, _ = expected_history(ingested.root)
    assert {r["customer_id"] for r in ingested.table("silver_customers").collect()} == set(history)


@pytest.mark.parametrize(
    "header",
    [
        pytest.param(None, id="missing-header"),
        pytest.param("name,customer_id,email,tier,country,op,updated_at", id="reordered"),
        pytest.param("customer_id,full_name,email,tier,country,op,updated_at", id="renamed"),
        pytest.param(HEADER + ",loyalty_points", id="extra-column"),
        pytest.param("customer_id,name,email,tier,country,op", id="missing-column"),
    ],
)
def test_a_wrong_header_stops_the_run_clearly_until_the_file_is_removed(lakehouse: Lakehouse, header: str | None) -> None:
    folder = lakehouse.landing("customers")
    (folder / "good.csv").write_text(f"{HEADER}\n{RECORD.format(id='g1')}\n")
    lines = [RECORD.format(id="h1"), RECORD.format(id="h2")]
    (folder / "wrong-header.csv").write_text("\n".join(([header] if header else []) + lines) + "\n")
    failed = lakehouse.materialize(["bronze_customers"], raise_on_error=False)
    assert not failed.success
    failure = next(e for e in failed.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.step_failure_data.error.message
    assert "wrong-header.csv" in message and "header" in message.lower(), message
    # Spark's own words say what it expected and what it found.
    assert re.search(r"expected \S+ but found \S+|header has \d+ columns but \d+ are declared", message), message
    assert len(message) < 3000 and "Traceback" not in message, "one clear message, not a stack trace"
    assert not (Path(lakehouse.paths.table("bronze_customers")) / "_delta_log").exists() or not {
        r[0] for r in lakehouse.table("bronze_customers").select("customer_id").collect()
    } & {"h1", "h2"}, "no record of the bad file may be written under the wrong columns"
    (folder / "wrong-header.csv").unlink()
    (folder / "after.csv").write_text(f"{HEADER}\n{RECORD.format(id='a1')}\n")
    assert lakehouse.materialize(["bronze_customers"]).success
    ids = Counter(r[0] for r in lakehouse.table("bronze_customers").select("customer_id").collect())
    assert ids == Counter({"g1": 1, "a1": 1})
