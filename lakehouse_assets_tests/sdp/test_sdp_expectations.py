"""Lakeflow's expectation decorators (``lakehouse_assets.lib.dp``) on a pipeline loaded with
``load_spark_pipeline``: rows dropped, quarantined or kept as declared, counts per expectation in
the run's metadata and as asset checks, and a failed ``expect_or_fail`` failing the run."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.lib import LakehousePaths, load_spark_pipeline

SPEC = Path(__file__).parent / "expectations_pipeline" / "spark-pipeline.yml"


def land(root: Path, name: str, rows: list[dict]) -> None:
    folder = root / "landing" / "payments"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"_{name}").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / f"_{name}").rename(folder / name)


def payment(i: int, amount: float, currency: str, note: str | None = "ok") -> dict:
    return {"payment_id": f"p{i}", "amount": amount, "currency": currency, "note": note}


@pytest.mark.slow
@pytest.mark.gate  # CI's representative of this file (docs/testing.md)
def test_expectations_drop_quarantine_warn_and_fail(tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))
    rows = [
        payment(1, 10.0, "EUR"), payment(2, 20.0, "USD", None), payment(3, -5.0, "EUR"),
        payment(4, 7.0, "GBP"), payment(5, 0.0, "USD", None), payment(6, 30.0, "CHF", None),
    ]  # fmt: skip
    land(root, "1.json", rows)
    defs = load_spark_pipeline(SPEC, paths=LakehousePaths(str(root)))
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(list(defs.assets or []), resources=defs.resources, instance=instance, selection="*")
    assert result.success

    kept = [r for r in rows if r["amount"] > 0 and r["currency"] in ("EUR", "USD")]
    quarantined = [r for r in rows if r["amount"] > 0 and r["currency"] not in ("EUR", "USD")]
    table = spark.read.format("delta").load(str(root / "tables" / "payments"))
    assert sorted(r.payment_id for r in table.collect()) == sorted(r["payment_id"] for r in kept)
    quarantine = spark.read.format("delta").load(str(root / "tables" / "payments_quarantine")).collect()
    assert sorted(r.payment_id for r in quarantine) == sorted(r["payment_id"] for r in quarantined)
    assert all("known_currency" in r.failed_expectations for r in quarantine)

    metadata = {
        k: getattr(v, "value", v) for k, v in result.asset_materializations_for_node("payments")[0].metadata.items()
    }
    assert metadata["expectation/has_note/failed"] == sum(r["note"] is None for r in rows)
    assert metadata["expectation/positive_amount/failed"] == sum(r["amount"] <= 0 for r in rows)
    assert metadata["expectation/known_currency/failed"] == sum(r["currency"] not in ("EUR", "USD") for r in rows)
    assert metadata["dropped_expectations"] == sum(r["amount"] <= 0 for r in rows)
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks["expect_has_note"].passed and checks["expect_has_note"].metadata["failed"].value == 3
    assert checks["expect_positive_amount"].passed is False
    assert checks["expect_below_limit"].passed
    totals = {r.currency: r.total for r in spark.read.format("delta").load(str(root / "tables" / "totals")).collect()}
    assert totals == {c: sum(r["amount"] for r in kept if r["currency"] == c) for c in ("EUR", "USD")}

    land(root, "2.json", [payment(7, 5_000_000.0, "EUR")])
    failed = dg.materialize(
        list(defs.assets or []), resources=defs.resources, instance=instance, selection="*", raise_on_error=False
    )
    assert not failed.success
    failures = [e for e in failed.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    assert len(failures) == 1 and failures[0].step_key == "totals"
    assert "below_limit" in str(failures[0].event_specific_data.error)
