"""Auto Loader code from Databricks (``format("cloudFiles")``) runs as written: its JSON files,
landed outside the data root, get an inferred schema that grows with a new field, a downstream
table follows, and both tables equal what the test computes from the files."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.lib import DeclarationError, LakehousePaths, load_spark_pipeline
from lakehouse_assets.lib.orchestrate.markdown import escape
from lakehouse_assets.lib.sdp.auto_loader import auto_loader_input
from lakehouse_assets.lib.sdp.plan_reading import FileRead

SPEC = Path(__file__).parent / "autoloader_pipeline" / "spark-pipeline.yml"


def land(folder: Path, name: str, lines: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"_{name}").write_text("".join(line + "\n" for line in lines))
    (folder / f"_{name}").rename(folder / name)


@pytest.mark.unit
def test_auto_loader_options_map_onto_a_landing_input() -> None:
    read = FileRead(
        "cloudFiles",
        ("s3a://bucket/raw/meters/",),
        True,
        (("cloudFiles.format", "json"), ("cloudFiles.schemaHints", "kwh double"), ("pathGlobFilter", "*.json")),
    )
    found = auto_loader_input(read, "f.py:3")
    assert (found.path, found.source, found.glob, found.schema_hints, found.evolution) == (
        "s3a://bucket/raw/meters/",
        "meters",
        "*.json",
        "kwh double",
        "addNewColumns",
    )
    avro = auto_loader_input(FileRead("cloudFiles", ("/x/m",), True, (("cloudFiles.format", "avro"),)), "f.py:3")
    assert (avro.format, avro.source, avro.evolution) == ("avro", "m", "addNewColumns")
    plain_csv = auto_loader_input(FileRead("cloudFiles", ("/x/s",), True, (("cloudFiles.format", "csv"),)), "f.py:3")
    # Databricks' defaults for CSV: the first line is a record, every column a string.
    assert (plain_csv.format, plain_csv.options, plain_csv.infer_column_types) == ("csv", {"header": "false"}, False)
    with pytest.raises(DeclarationError, match=r"f.py:3: Auto Loader reads cloudFiles.format 'json'.*not 'text'"):
        auto_loader_input(FileRead("cloudFiles", ("/x",), True, (("cloudFiles.format", "text"),)), "f.py:3")
    with pytest.raises(DeclarationError, match=r"useManagedFileEvents|usemanagedfileevents"):
        options = (("cloudFiles.format", "json"), ("cloudFiles.useManagedFileEvents", "true"))
        auto_loader_input(FileRead("cloudFiles", ("/x",), True, options), "f.py:3")


@pytest.mark.slow
def test_auto_loader_code_runs_as_written_and_follows_a_new_field(tmp_path: Path, spark, monkeypatch) -> None:
    root, landing = tmp_path / "root", tmp_path / "raw" / "meters"
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))
    monkeypatch.setenv("METERS_LANDING", str(landing))
    sites = tmp_path / "exports" / "sites"
    monkeypatch.setenv("SITES_LANDING", str(sites))
    # CSV exports: the second file orders its columns differently and adds one.
    csv_rounds = [["meter,capacity", "1,5", "2,7.5"], ["capacity,meter,region", "3,10,north"]]
    defs = load_spark_pipeline(SPEC, paths=LakehousePaths(str(root)))
    instance = dg.DagsterInstance.ephemeral()
    rounds = [
        [{"id": "1", "kwh": 1}, {"id": "2", "kwh": "n/a"}, {"id": "3"}],
        [{"id": "4", "kwh": 2.5, "site": "x"}, {"id": "5", "kwh": 0.5, "site": "y"}],
    ]
    landed: list[dict] = []
    for i, records in enumerate(rounds):
        land(landing, f"{i}.json", [json.dumps(r) for r in records])
        land(sites, f"{i}.csv", csv_rounds[i])
        landed += records
        result = dg.materialize(list(defs.assets or []), resources=defs.resources, instance=instance, selection="*")
        assert result.success

    def rows(name: str) -> list[dict]:
        frame = spark.read.format("delta").load(str(root / "tables" / name)).drop("_source_file", "_ingested_at")
        return sorted((r.asDict() for r in frame.collect()), key=lambda r: r["id"])

    def expected(record: dict) -> dict:
        kwh = record.get("kwh")
        fits = kwh is None or isinstance(kwh, (int, float))
        return {
            "id": record["id"],
            "kwh": float(kwh) if fits and kwh is not None else None,
            "site": record.get("site"),
            "_rescue": None if fits else json.dumps({"kwh": kwh}, separators=(",", ":")),
        }

    want = sorted((expected(r) for r in landed), key=lambda r: r["id"])
    assert rows("raw_meters") == want
    assert rows("metered") == [w for w in want if w["kwh"] is not None]
    changed = [
        m.materialization.metadata["schema_changes"].value
        for m in result.get_asset_materialization_events()
        if "schema_changes" in m.materialization.metadata
    ]
    assert any(escape("added column site string (first in 1.json)") in c for c in changed), changed
    assert not (root / "landing").exists()
    # capacity typed double by inference, meter string by its hint, region added as a column;
    # each file read by its own header's names.
    site_rows = sorted(
        (
            r.asDict()
            for r in spark.read.format("delta")
            .load(str(root / "tables" / "raw_sites"))
            .select("meter", "capacity", "region", "_rescued_data")
            .collect()
        ),
        key=lambda r: r["meter"],
    )
    assert site_rows == [
        {"meter": "1", "capacity": 5.0, "region": None, "_rescued_data": None},
        {"meter": "10", "capacity": 3.0, "region": "north", "_rescued_data": None},
        {"meter": "2", "capacity": 7.5, "region": None, "_rescued_data": None},
    ]
