"""Data-aware freshness: files land in two sources, only part of the chain runs, and each table
is as far behind as the oldest landed file it does not hold, its age computed here from the
files' arrival times; ``caught_up_with_landing`` fails past its limit and passes once the chain
has run; the freshness sensor reports the same without a run."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import dagster as dg
from pyspark.sql import DataFrame

from lakehouse_assets.lib import (
    append_flow,
    build_definitions,
    caught_up_with_landing,
    landing,
    non_blank_lines,
    parse_json_lines,
    stream,
    streaming_table,
)
from lakehouse_assets.lib.engine.freshness import caught_up, feeding_folders, freshness
from lakehouse_assets.lib.paths import LakehousePaths

FIELDS = {"id": "string", "n": "long"}
LIMIT_S = 600


def _parsed(lines: DataFrame) -> DataFrame:
    return parse_json_lines(non_blank_lines(lines), FIELDS)


@streaming_table(group="raw", inputs={"lines": landing("a", glob="*.jsonl")})
def a_raw(lines: DataFrame) -> DataFrame:
    """Source a."""
    return _parsed(lines)


@streaming_table(group="raw", inputs={"lines": landing("b", glob="*.jsonl")})
def b_raw(lines: DataFrame) -> DataFrame:
    """Source b."""
    return _parsed(lines)


@streaming_table(
    group="joined",
    inputs={"rows": stream("a_raw")},
    flows=[append_flow("from_b", inputs={"rows": stream("b_raw")})],
    checks=[caught_up_with_landing("10 minutes")],
)
def combined(rows: DataFrame) -> DataFrame:
    """Both sources' rows."""
    return rows.select("id", "n")


TABLES = [a_raw, b_raw, combined]


def land(root: Path, source: str, name: str) -> int:
    """Drop a file; when it arrived (its inode's change time, ns)."""
    folder = root / "landing" / source
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"id": name, "n": 1}) + "\n")
    return os.stat(path).st_ctime_ns


def materialize(defs: dg.Definitions, instance: dg.DagsterInstance, selection: str) -> dg.ExecuteInProcessResult:
    result = dg.materialize(list(defs.assets or []), resources=defs.resources, instance=instance, selection=selection)
    assert result.success
    return result


def test_each_table_is_as_far_behind_as_the_oldest_file_it_lacks(tmp_path: Path, spark) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    root = Path(paths.root)
    defs = build_definitions(TABLES, paths)
    instance = dg.DagsterInstance.ephemeral()
    a1 = land(root, "a", "a1.jsonl")
    b1 = land(root, "b", "b1.jsonl")
    # Before any run, by the declarations: every landed file of both folders waits.
    now = time.time_ns()
    early = freshness(paths, "combined", now, feeding_folders(paths, "combined", TABLES))
    assert early.never_run and early.waiting == {"landing/a": 1, "landing/b": 1}
    assert early.behind_s == round((now - min(a1, b1)) / 1e9, 3)
    assert freshness(paths, "combined", now).behind_s == 0.0  # without them: nothing known to wait for
    materialize(defs, instance, "*")
    now = time.time_ns()
    assert {t.name: freshness(paths, t.name, now).behind_s for t in TABLES} == dict.fromkeys(
        ("a_raw", "b_raw", "combined"), 0.0
    )

    a2 = land(root, "a", "a2.jsonl")
    time.sleep(0.05)
    b2 = land(root, "b", "b2.jsonl")
    materialize(defs, instance, "a_raw")  # b_raw and combined do not run
    now = time.time_ns()
    expected = {"a_raw": 0.0, "b_raw": (now - b2) / 1e9, "combined": (now - min(a2, b2)) / 1e9}
    found = {t.name: freshness(paths, t.name, now) for t in TABLES}
    assert {name: f.behind_s for name, f in found.items()} == {k: round(v, 3) for k, v in expected.items()}
    assert found["combined"].oldest == "a2.jsonl" and found["combined"].waiting == {"landing/a": 1, "landing/b": 1}
    assert found["b_raw"].waiting == {"landing/b": 1} and found["a_raw"].waiting == {"landing/a": 0}
    shared: dict = {}  # what the sensor passes: each folder listed once for the three tables
    assert {t.name: freshness(paths, t.name, now, listed=shared) for t in TABLES} == found
    assert sorted(folder.rsplit("/", 1)[-1] for folder, _ in shared) == ["a", "b"]

    later = now + (LIMIT_S + 60) * 1_000_000_000  # the check as it will stand in 11 minutes
    late = caught_up(paths, "combined", LIMIT_S, later)
    assert not late.passed and late.metadata["files_waiting"] == 2
    assert late.metadata["behind_s"] == round((later - a2) / 1e9, 3)

    # The sensor says so without a run, once; a second tick with nothing changed reports nothing.
    sensor = next(s for s in defs.sensors or [] if s.name == "lakehouse_freshness")
    with dg.build_sensor_context(instance=instance) as context:
        first = sensor(context)
    assert isinstance(first, dg.SensorResult)
    assert [(e.asset_key.to_user_string(), e.passed) for e in first.asset_events] == [("combined", True)]
    # Its tick's time is in its skip reason; landing/a and landing/b listed once each, looking at
    # no file one by one: the listings above (kept under the data root) saw the two new ones.
    assert re.search(
        r"\(tick \d+ ms, 2 folder listing\(s\), entries looked at: 0\)", first.skip_reason.skip_message or ""
    )

    result = materialize(defs, instance, "key:b_raw or key:combined")
    evaluation = next(e for e in result.get_asset_check_evaluations() if e.check_name == "caught_up_with_landing")
    assert evaluation.passed and evaluation.metadata["behind_s"].value == 0.0
    assert caught_up(paths, "combined", LIMIT_S, later).passed
    assert {t.name: freshness(paths, t.name, later).behind_s for t in TABLES} == dict.fromkeys(
        ("a_raw", "b_raw", "combined"), 0.0
    )

    # The next tick looks at the one file landed since the last, not at the folders' history.
    land(root, "a", "a3.jsonl")
    with dg.build_sensor_context(instance=instance, cursor=first.cursor) as context:
        second = sensor(context)
    assert isinstance(second, dg.SensorResult) and second.asset_events == []  # still within its limit
    assert "2 folder listing(s), entries looked at: 1" in (second.skip_reason.skip_message or "")
