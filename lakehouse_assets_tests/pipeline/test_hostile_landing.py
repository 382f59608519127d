"""Entries a real landing zone meets, beside a normal feed: a decompression bomb, a link to a
secret inside the data root, a link to itself, a name Spark reads as a pattern, a name with a
space and a percent sign, an empty file, a folder named like a file, a key holding a back-quote,
a CSV header a megabyte wide and a CSV record of 30,000 fields. Each hostile entry is set aside
in words (one quarantine row naming it, never its content) while every table equals the answers
computed here from the normal files, and files landed later reach gold."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from devstack.connect_server import ConnectServer
from devstack.ports import free_port
from lakehouse_assets.generate import GeneratorOptions, generate
from verification.contract import assert_every_source_exact
from verification.crash import materialize_in_child
from verification.lakehouse import Lakehouse

SECRET = "TOPSECRET-7f3a91"
BOMB_GIB = 3


def write_bomb(path: Path) -> int:
    """A gzip file of ~3 MiB holding one line of 3 GiB (gzip members, each 64 MiB of one byte)."""
    member = gzip.compress(b"x" * (64 << 20), compresslevel=9)
    with open(path, "wb") as out:
        for _ in range(BOMB_GIB * 16):
            out.write(member)
    return path.stat().st_size


def event(event_id: str, **fields: object) -> str:
    record = {"event_id": event_id, "event_time": "2026-11-20T10:00:00Z", "user_id": "c1",
              "event_type": "purchase", "amount": 2.5, "category": "books"} | fields  # fmt: skip
    return json.dumps(record)


def land_hostile_entries(lh: Lakehouse) -> dict[str, set[str]]:
    """Land every hostile entry; the names expected in ``_set_aside/``, by source."""
    events, customers = lh.landing("events"), lh.landing("customers")
    write_bomb(events / "bomb.json.gz")
    secret = lh.root / "notes.txt"  # inside the data root, like .s3-env or .postgres-url
    secret.write_text(event(SECRET) + "\n")
    (events / "link.json").symlink_to(secret)
    (events / "loop.json").symlink_to("loop.json")
    (events / "ev*.json").write_text(event("glob-name") + "\n")
    (events / "ev 100%.json").write_text(event("percent-name") + "\n" + event("percent-name-2") + "\n")
    (events / "empty.json").write_bytes(b"")
    (events / "dir.json").mkdir()
    (events / "dir.json" / "inside.json").write_text(event("inside-a-folder") + "\n")
    (events / "backtick.json").write_text(event("backtick-key", **{"a`b": 1, "`": "q", "c.d": 2}) + "\n")
    header = ",".join(f"c{i}" for i in range(120_000))  # about 1 MiB
    (customers / "wide.csv").write_text(header + "\n" + ",".join("v" for _ in range(120_000)) + "\n")
    usual = next(customers.glob("customers-*.csv")).read_text().splitlines()[0]
    (customers / "many.csv").write_text(f"{usual}\n{','.join('v' * 30_000)}\n")  # past Spark's maxColumns
    return {"events": {"bomb.json.gz", "link.json", "loop.json", "ev*.json"}, "customers": {"wide.csv", "many.csv"}}


def every_table_as_text(lh: Lakehouse) -> str:
    """Every row of every table under the data root, as JSON text."""
    tables = sorted(p.name for p in (lh.root / "tables").iterdir() if (p / "_delta_log").is_dir())
    return "\n".join(row[0] for t in tables for row in lh.table(t).select(F.to_json(F.struct("*"))).collect())


@pytest.fixture(scope="module")
def hostile(module_lakehouse: Lakehouse) -> Lakehouse:
    lh = module_lakehouse
    generate(lh.paths, GeneratorOptions(files=2, rows=120, seed=11))
    lh.expected_aside = land_hostile_entries(lh)  # type: ignore[attr-defined]
    result = lh.materialize("*", raise_on_error=False)
    lh.result = result  # type: ignore[attr-defined]
    return lh


def test_every_table_equals_the_answers_of_the_normal_files(hostile: Lakehouse) -> None:
    assert hostile.result.success, [e.message for e in hostile.result.all_events if e.is_failure]  # type: ignore[attr-defined]
    assert_every_source_exact(hostile)
    bronze = {r["event_id"]: r for r in hostile.table("bronze_events").collect()}
    assert {"percent-name", "percent-name-2", "backtick-key"} <= set(bronze)
    assert Path(bronze["percent-name"]["_source_file"].removeprefix("file:")).name == "ev 100%.json", "stored as landed"
    assert json.loads(bronze["backtick-key"]["_rescued_data"]) == {"a`b": 1, "`": "q", "c.d": 2}
    assert "glob-name" not in bronze and "inside-a-folder" not in bronze


def test_each_hostile_entry_is_set_aside_in_words(hostile: Lakehouse) -> None:
    for source, names in hostile.expected_aside.items():  # type: ignore[attr-defined]
        folder = hostile.landing(source)
        assert {p.name for p in (folder / "_set_aside").iterdir()} == names
        table = f"bronze_{source}_quarantine"
        rows = hostile.table(table).where("_set_aside_reason IS NOT NULL").collect()
        assert sorted(Path(r["_source_file"].removeprefix("file:")).name for r in rows) == sorted(names)
        assert all(r["raw_line"] is None for r in rows), "a set-aside row names the file, never its content"
    reasons = {
        Path(r["_source_file"]).name: (r["_set_aside_reason"], r["_set_aside_bytes"])
        for r in hostile.table("bronze_events_quarantine").where("_set_aside_reason IS NOT NULL").collect()
    }
    assert "longer than 16 MiB" in reasons["bomb.json.gz"][0]
    assert reasons["bomb.json.gz"][1] == (hostile.landing("events") / "_set_aside" / "bomb.json.gz").stat().st_size
    assert "symbolic link" in reasons["link.json"][0] and "loop" in reasons["loop.json"][0]
    assert "pattern" in reasons["ev*.json"][0]
    csv_reasons = {
        Path(r["_source_file"]).name: r["_set_aside_reason"]
        for r in hostile.table("bronze_customers_quarantine").where("_set_aside_reason IS NOT NULL").collect()
    }
    assert "120000 columns" in csv_reasons["wide.csv"]
    assert "a CSV record in it holds more than 20480 fields" in csv_reasons["many.csv"], csv_reasons
    logs = [e.user_message for e in hostile.instance.all_logs(hostile.result.run_id) if e.level == logging.WARNING]  # type: ignore[attr-defined]
    for name in ("bomb.json.gz", "link.json", "loop.json", "ev*.json", "wide.csv", "many.csv"):
        assert sum(f"set aside landed file {name} " in line for line in logs) == 1, (name, logs)
    assert any("dir.json/" in line and "will not be ingested" in line for line in logs), logs
    checks = {(e.asset_key.to_user_string(), e.check_name): e for e in hostile.result.get_asset_check_evaluations()}  # type: ignore[attr-defined]
    aside = checks[("bronze_events", "no_files_set_aside")]
    assert not aside.passed and aside.metadata["files_set_aside"].value == 4
    assert checks[("bronze_ad_clicks", "no_files_set_aside")].passed


def test_nothing_of_the_bomb_nor_the_secret_is_stored(hostile: Lakehouse) -> None:
    stored = every_table_as_text(hostile)
    assert SECRET not in stored and "xxxxxxxxxxxxxxxx" not in stored
    events = "\n".join(str(e) for e in hostile.instance.all_logs(hostile.result.run_id))  # type: ignore[attr-defined]
    assert SECRET not in events, "the secret reached Dagster's event log"


def test_files_landed_later_reach_gold_and_nothing_is_set_aside_twice(hostile: Lakehouse) -> None:
    generate(hostile.paths, GeneratorOptions(files=1, rows=80, seed=12))
    assert hostile.materialize("*").success
    assert_every_source_exact(hostile)
    aside = hostile.table("bronze_events_quarantine").where("_set_aside_reason IS NOT NULL").count()
    assert aside == len(hostile.expected_aside["events"])  # type: ignore[attr-defined]


@pytest.mark.slow
def test_through_the_engine_the_same_and_the_engine_lives_on(tmp_path: Path, spark) -> None:
    """The same landing zone, the run a client of a Spark Connect engine: the engine is the same
    process before and after (a bomb read there would kill it for every table), the tables equal
    the normal files' answers, and nothing of the secret reaches Dagster's storage. (Files landed
    later reaching gold: the embedded test above.)"""
    lh = Lakehouse(tmp_path / "lakehouse", spark, None)  # type: ignore[arg-type] - only its tables are read
    generate(lh.paths, GeneratorOptions(files=2, rows=120, seed=21))
    aside = land_hostile_entries(lh)
    with open(tmp_path / "engine.log", "ab") as log, ConnectServer(free_port(), log=log) as engine:
        assert engine.process is not None
        pid = engine.process.pid
        run = materialize_in_child(tmp_path, "*", env={"SPARK_REMOTE": engine.url})
        assert run.returncode == 0, run.output[-3000:]
        assert engine.process.pid == pid and engine.process.poll() is None, "the engine died"
    assert_every_source_exact(lh)
    for source, names in aside.items():
        assert {p.name for p in (lh.landing(source) / "_set_aside").iterdir()} == names
    assert SECRET not in every_table_as_text(lh)
    stored = b"".join(p.read_bytes() for p in (tmp_path / "dagster_home").rglob("*") if p.is_file())
    assert SECRET.encode() not in stored, "the secret reached Dagster's storage"
