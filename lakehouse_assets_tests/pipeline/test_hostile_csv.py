"""Hostile CSV in the customers change feed: malformed records are quarantined with their file,
nothing valid is lost, and a file whose header does not match the declared columns stops the
run with one clear message naming it (mapping its columns by position would silently put
values in the wrong columns) until it is removed, after which the next run goes on."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from verification.expected import expected_history
from verification.lakehouse import Lakehouse

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
        f"{RECORD.format(id='u3')}\n",
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
    got = Counter(
        (Path(r["_source_file"]).name, r["raw_line"]) for r in ingested.table("bronze_customers_quarantine").collect()
    )
    want = Counter((name, line) for name, (_, _, lines) in QUARANTINED.items() for line in lines)
    assert got == want


def test_valid_records_are_all_kept(ingested: Lakehouse) -> None:
    got = Counter(
        (Path(r["_source_file"]).name, r["customer_id"]) for r in ingested.table("bronze_customers").collect()
    )
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
def test_a_wrong_header_is_set_aside_in_spark_s_words_and_the_rest_flows(
    lakehouse: Lakehouse, header: str | None
) -> None:
    """A file whose reading fails (a poison file) is set aside once it failed twice in a row, in
    the same run, and the folder's other files are read."""
    folder = lakehouse.landing("customers")
    (folder / "good.csv").write_text(f"{HEADER}\n{RECORD.format(id='g1')}\n")
    lines = [RECORD.format(id="h1"), RECORD.format(id="h2")]
    (folder / "wrong-header.csv").write_text("\n".join(([header] if header else []) + lines) + "\n")
    result = lakehouse.materialize(["bronze_customers"])
    assert result.success
    ids = Counter(r[0] for r in lakehouse.table("bronze_customers").select("customer_id").collect())
    assert ids == Counter({"g1": 1}), "no record of the bad file may be written under the wrong columns"
    aside = lakehouse.table("bronze_customers_quarantine").where("_set_aside_reason IS NOT NULL").collect()
    assert [Path(r["_source_file"]).name for r in aside] == ["wrong-header.csv"]
    reason = aside[0]["_set_aside_reason"]
    assert "failed 2 times in a row" in reason and "header" in reason.lower(), reason
    # Spark's own words say what it expected and what it found.
    assert re.search(r"expected \S+ but found \S+|header has \d+ columns but \d+ are declared", reason), reason
    assert (folder / "_set_aside" / "wrong-header.csv").exists()


def test_a_poison_file_fixed_is_taken_back_in_and_read_once(lakehouse: Lakehouse) -> None:
    folder = lakehouse.landing("customers")
    (folder / "good.csv").write_text(f"{HEADER}\n{RECORD.format(id='g1')}\n")
    (folder / "wrong-header.csv").write_text("id,who\n" + RECORD.format(id="h1") + "\n")
    assert lakehouse.materialize(["bronze_customers"]).success
    fixed = folder / "_set_aside" / "wrong-header.csv"
    fixed.write_text(f"{HEADER}\n{RECORD.format(id='h1')}\n{RECORD.format(id='h2')}\n")
    env = {**os.environ, "LAKEHOUSE_ROOT": str(lakehouse.root)}
    listed = subprocess.run(
        [sys.executable, "-m", "lakehouse_assets.set_aside"], env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0 and "wrong-header.csv" in listed.stdout, listed.stderr
    retaken = subprocess.run([sys.executable, "-m", "lakehouse_assets.set_aside", "retake", "bronze_customers"],
                             env=env, capture_output=True, text=True)  # fmt: skip
    assert retaken.returncode == 0, retaken.stderr
    assert (folder / "wrong-header.retaken-1.csv").exists(), "a planned name comes back under a new one"
    result = lakehouse.materialize(["bronze_customers"])
    assert result.success
    ids = Counter(r[0] for r in lakehouse.table("bronze_customers").select("customer_id").collect())
    assert ids == Counter({"g1": 1, "h1": 1, "h2": 1})
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["no_files_set_aside"], "nothing is set aside any more"
