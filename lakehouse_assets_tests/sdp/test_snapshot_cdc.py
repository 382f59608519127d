"""Lakeflow's snapshot CDC (``apply_changes_from_snapshot`` / ``create_auto_cdc_from_snapshot_flow``)
as written: a full snapshot replaced each round, applied to an SCD type 1 table and an SCD type 2
history; both equal what the test derives from the snapshots, and an unchanged snapshot changes
nothing."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.lib import LakehousePaths, load_spark_pipeline

SPEC = Path(__file__).parent / "snapshot_pipeline" / "spark-pipeline.yml"
SNAPSHOTS = [
    {"a": "silver", "b": "gold"},
    {"a": "silver", "b": "platinum", "c": "gold"},
    {"a": "silver", "c": "gold"},
    {"a": "silver", "c": "gold"},  # unchanged: no new version
]


def history(snapshots: list[dict[str, str]]) -> list[tuple]:
    """SCD type 2 rows from the snapshots, numbered 1, 2, ... by the snapshot that changed them."""
    rows: list[list] = []
    number = 0
    current: dict[str, list] = {}
    for snapshot in snapshots:
        changed = {k for k in current if snapshot.get(k) != current[k][1]} | (set(snapshot) - set(current))
        if not changed:
            continue
        number += 1
        for key in sorted(changed):
            if key in current:
                current[key][3], current[key][4] = number, False
                del current[key]
            if key in snapshot:
                row = [key, snapshot[key], number, None, True]
                rows.append(row)
                current[key] = row
    return sorted(tuple(r) for r in rows)


@pytest.mark.slow
def test_snapshots_become_a_current_table_and_a_history(tmp_path: Path, spark, monkeypatch) -> None:
    root, folder = tmp_path / "root", tmp_path / "crm"
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))
    monkeypatch.setenv("CRM_SNAPSHOTS", str(folder))
    defs = load_spark_pipeline(SPEC, paths=LakehousePaths(str(root)))
    instance = dg.DagsterInstance.ephemeral()
    folder.mkdir()

    def table(name: str) -> list[tuple]:
        return sorted(tuple(r) for r in spark.read.format("delta").load(str(root / "tables" / name)).collect())

    for i, snapshot in enumerate(SNAPSHOTS):
        for old in folder.iterdir():
            old.unlink()
        (folder / f"day{i}.json").write_text(
            "".join(json.dumps({"id": k, "tier": v}) + "\n" for k, v in snapshot.items())
        )
        result = dg.materialize(list(defs.assets or []), resources=defs.resources, instance=instance, selection="*")
        assert result.success
        assert table("customers") == sorted(snapshot.items())
        assert table("customers_history") == history(SNAPSHOTS[: i + 1])
        checks = result.get_asset_check_evaluations()
        assert {c.check_name for c in checks} >= {"unique_id", "scd2_history_valid"}
        assert all(c.passed for c in checks), [c for c in checks if not c.passed]
