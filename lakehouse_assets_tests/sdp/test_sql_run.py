"""A pipeline whose silver and gold are SQL files runs here over two rounds of landed files: every
table equals what the test computes from the files itself."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.lib import LakehousePaths, load_spark_pipeline

SPEC = Path(__file__).parent / "sql_pipeline" / "spark-pipeline.yml"


def cdc_answers(landed: list[tuple[str, str, float]]) -> tuple[dict[str, float], dict[str, int]]:
    """Per customer, by order id: the latest order's amount unless it was a delete (amount < 0),
    and how many SCD2 versions its changes open (a new amount, or any row after a delete)."""
    latest: dict[str, float | None] = {}
    versions: Counter[str] = Counter()
    for _, customer, amount in sorted(landed):
        if amount < 0:
            latest[customer] = None
        elif latest.get(customer) != amount:
            versions[customer] += 1
            latest[customer] = amount
    return {c: a for c, a in latest.items() if a is not None}, dict(versions)


@pytest.mark.slow
@pytest.mark.gate  # CI's representative of this file (docs/testing.md)
def test_sql_datasets_run_and_are_exact(tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))
    folder = root / "landing" / "orders"
    folder.mkdir(parents=True)
    rounds = [
        [("o1", "c1", 10.0), ("o2", "c2", -1.0), ("o3", "c1", 150.5)],
        [("o4", "c2", 7.25), ("o5", "c3", 0.0), ("o6", "c3", 100.0)],
    ]
    defs = load_spark_pipeline(SPEC, paths=LakehousePaths(str(root)))
    instance = dg.DagsterInstance.ephemeral()
    landed: list[tuple[str, str, float]] = []
    for i, rows in enumerate(rounds):
        (folder / f"_{i}.json").write_text("".join(json.dumps({"order_id": o, "customer_id": c, "amount": a}) + "\n"
                                                   for o, c, a in rows))  # fmt: skip
        (folder / f"_{i}.json").rename(folder / f"{i}.json")
        landed += rows
        result = dg.materialize(list(defs.assets or []), resources=defs.resources, instance=instance, selection="*")
        assert result.success
        checks = {(e.asset_key.path[-1], e.check_name): e for e in result.get_asset_check_evaluations()}
        dropped = checks[("orders_clean", "expect_positive_amount")]
        assert dropped.metadata["failed"].value == sum(a <= 0 for _, _, a in rows)  # this round's rows

        def table(name: str):
            return spark.read.format("delta").load(str(root / "tables" / name))

        assert sorted(r.order_id for r in table("bronze_orders").collect()) == sorted(o for o, _, _ in landed)
        assert sorted(r.order_id for r in table("orders_clean").collect()) == sorted(o for o, _, a in landed if a > 0)
        revenue: dict[str, list[float]] = defaultdict(list)
        for _, c, a in landed:
            if a > 0:
                revenue[c].append(a)
        got = {r.customer_id: (r.revenue, r.orders) for r in table("revenue").collect()}
        assert got == {c: (round(sum(v), 2), len(v)) for c, v in revenue.items()}
        assert sorted((r.order_id, r.amount) for r in table("big_orders").collect()) == sorted(
            (o, a) for o, _, a in landed if a >= 100
        )
        latest, versions = cdc_answers(landed)
        assert {r.customer_id: r.amount for r in table("customer_latest").collect()} == latest
        history = table("customer_history").collect()
        assert {r.customer_id: r.amount for r in history if r.is_current} == latest
        assert dict(Counter(r.customer_id for r in history)) == versions
    # CLUSTER BY made a Delta table with liquid clustering on that column
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{root / 'tables' / 'orders_clean'}`").first()
    assert list(detail["clusteringColumns"]) == ["customer_id"]
