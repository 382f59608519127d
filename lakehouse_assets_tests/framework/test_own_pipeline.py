"""The framework on a pipeline of its own: declared, collected, built into Dagster definitions and
materialized, with the tables compared to answers computed here from the landed lines."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.lib import (
    DeclarationError,
    LakehouseError,
    LakehousePaths,
    build_definitions,
    collect_tables,
    recompute,
    static,
    streaming_table,
)

PACKAGE = "lakehouse_assets_tests.framework.tiny_pipeline"


def land(root: Path, name: str, lines: list[str]) -> None:
    folder = root / "landing" / "readings"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"_{name}").write_text("\n".join(lines) + "\n")
    (folder / f"_{name}").rename(folder / name)  # complete files appear by rename


def reading(i: int, meter: str, kwh: float | None) -> str:
    return json.dumps({"reading_id": f"r{i}", "meter": meter, "kwh": kwh})


def record_of(line: str) -> dict | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def expected(lines: list[str]) -> tuple[list[tuple], int, dict[str, tuple[float, int]]]:
    """(readings rows, quarantined lines, totals per meter) from the raw lines, by hand."""
    rows, bad, totals = [], 0, defaultdict(lambda: [0.0, 0])
    for line in lines:
        if not line.strip():
            continue
        record = record_of(line)
        if record is None:
            bad += 1
            continue
        if record.get("kwh") is None:
            continue  # dropped by kwh_present
        rows.append((record["reading_id"], record["meter"], float(record["kwh"])))
        totals[record["meter"]][0] += float(record["kwh"])
        totals[record["meter"]][1] += 1
    return sorted(rows), bad, {m: (round(v[0], 6), v[1]) for m, v in totals.items()}


def materialize(defs: dg.Definitions, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    return dg.materialize(list(defs.assets or []), resources=defs.resources, instance=instance, selection="*")


def test_collects_only_the_packages_tables() -> None:
    assert [t.name for t in collect_tables(PACKAGE)] == ["readings", "meter_totals"]


@pytest.mark.slow
def test_a_pipeline_of_its_own_materializes_exactly_through_dagster(tmp_path: Path, spark) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    defs = build_definitions(collect_tables(PACKAGE), paths)
    assert {k.to_user_string() for k in defs.resolve_all_asset_keys()} == {
        "readings",
        "readings_quarantine",
        "meter_totals",
    }
    assert {s.name for s in defs.sensors or []} == {"landing_readings_sensor", "lakehouse_automation"}
    instance = dg.DagsterInstance.ephemeral()
    root = Path(paths.root)
    first = [reading(1, "a", 1.5), reading(2, "b", 2.0), "not json", "", reading(3, "a", None), "[1, 2]"]
    second = [reading(4, "a", 0.25), reading(5, "c", 4.0), "{truncated", reading(6, "D", -1.0)]
    landed: list[str] = []
    for name, lines in (("one.jsonl", first), ("two.jsonl", second)):
        land(root, name, lines)
        landed += lines
        result = materialize(defs, instance)
        assert result.success
        rows, bad, totals = expected(landed)
        table = lambda name: spark.read.format("delta").load(paths.table(name))  # noqa: E731
        assert sorted(tuple(r) for r in table("readings").select("reading_id", "meter", "kwh").collect()) == rows
        assert table("readings_quarantine").count() == bad
        got = {r.meter: (round(r.kwh, 6), r.readings) for r in table("meter_totals").collect()}
        assert got == totals
        checks = result.get_asset_check_evaluations()
        assert checks and all(c.passed for c in checks if c.severity == dg.AssetCheckSeverity.ERROR)
        # the pipeline's own checks, WARN: round two brings a negative reading from meter D
        own = {c.check_name: c for c in checks if c.asset_key == dg.AssetKey("readings")}
        kept = [r for r in map(record_of, lines) if r and r.get("kwh") is not None]  # this run's rows
        negative = sum(r["kwh"] < 0 for r in kept)
        upper = sum(r["meter"] != r["meter"].lower() for r in kept)
        assert (own["kwh_not_negative"].passed, own["meters_lowercase"].passed) == (negative == 0, upper == 0)
        assert own["kwh_not_negative"].metadata["rows_failing"].value == negative
        assert own["meters_lowercase"].metadata["meters_not_lowercase"].value == upper
        asserted = own["asserts_no_negative"]
        assert asserted.passed == (negative == 0)
        assert negative == 0 or asserted.metadata["error"].value == "check could not run: AssertionError"
    # A run with nothing new writes nothing.
    versions = {
        n: spark.sql(f"DESCRIBE HISTORY delta.`{paths.table(n)}`").first()["version"]
        for n in ("readings", "meter_totals")
    }
    assert materialize(defs, instance).success
    assert versions == {n: spark.sql(f"DESCRIBE HISTORY delta.`{paths.table(n)}`").first()["version"] for n in versions}


def test_a_recompute_table_reads_exactly_one_stream() -> None:
    with pytest.raises(DeclarationError, match="exactly one Delta table as a stream or change feed"):

        @streaming_table(group="g", sink=recompute(keys=["k"], reread_by="k"))
        def two_streams(a, b):  # never run
            return a

    assert issubclass(DeclarationError, LakehouseError)

    @streaming_table(group="g", inputs={"lookup": static("lookup")}, sink=recompute(keys=["k"], reread_by="k"))
    def one_stream_and_a_lookup(a, lookup):  # never run
        return a

    assert list(one_stream_and_a_lookup.streaming_inputs) == ["a"]
