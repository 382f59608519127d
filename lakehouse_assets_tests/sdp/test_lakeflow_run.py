"""A Lakeflow pipeline (``import dlt`` and a SQL file) runs here as written, over two rounds of
files landed outside the data root (its code names where), the second round's first run killed
inside the Auto CDC flow that reads a view over raw files: every table equals what the test
computes from the files itself."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.lib import LakehousePaths, load_spark_pipeline
from verification.crash import materialize_in_child

SPEC = Path(__file__).parent / "lakeflow_pipeline" / "spark-pipeline.yml"
LOCATION = "lakehouse_assets_tests.sdp.lakeflow_definitions"


def land(landing: Path, source: str, name: str, rows: list[dict]) -> None:
    folder = landing / source
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"_{name}").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / f"_{name}").rename(folder / name)


@pytest.mark.slow
def test_a_lakeflow_pipeline_runs_as_written(tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    root, landing, export = tmp_path / "lakehouse", tmp_path / "elsewhere", tmp_path / "warehouse" / "orders"
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))
    monkeypatch.setenv("SHOP_LANDING", str(landing))
    monkeypatch.setenv("SHOP_EXPORT", str(export))
    rounds = [
        ([("o1", "c1", 10.0), ("o2", "c2", -1.0), ("o3", "c1", 5.5)],
         [("c1", "silver", "2026-11-01T00:00:00"), ("c2", "gold", "2026-11-01T00:00:00")]),
        ([("o4", "c2", 7.25), ("o5", "c3", 0.0)],
         [("c1", "gold", "2026-11-02T00:00:00")]),
    ]  # fmt: skip
    payments = [
        [("a1", 10.0, 1, "UPSERT"), ("a2", 5.0, 1, "UPSERT"), ("a1", 12.5, 2, "UPSERT")],
        [("a2", 0.0, 3, "DELETE"), ("a3", 1.0, 1, "UPSERT"), ("a1", 7.0, 4, "UPSERT")],
    ]
    defs = load_spark_pipeline(SPEC, paths=LakehousePaths(str(root)))
    instance = dg.DagsterInstance.ephemeral()
    # The old shop's orders, appended once by a backfill flow; a file landing there later is not read.
    history = [("h1", "c1", 3.0), ("h2", "c4", -2.0)]
    land(landing, "history", "old.json", [{"order_id": o, "customer_id": c, "amount": a} for o, c, a in history])
    orders: list[tuple[str, str, float]] = list(history)
    changes: list[tuple[str, str, str]] = []
    paid: list[tuple[str, float, int, str]] = []
    for i, (new_orders, new_changes) in enumerate(rounds):
        land(
            landing,
            "payments",
            f"{i}.json",
            [dict(zip(("account", "balance", "seq", "op"), p, strict=True)) for p in payments[i]],
        )
        paid += payments[i]
        land(landing, "orders", f"{i}.json", [{"order_id": o, "customer_id": c, "amount": a} for o, c, a in new_orders])
        land(landing, "crm", f"{i}.json", [{"customer_id": c, "tier": t, "ts": ts} for c, t, ts in new_changes])
        orders += new_orders
        changes += new_changes
        if i == 1:
            land(landing, "history", "late.json", [{"order_id": "h3", "customer_id": "c1", "amount": 9.0}])
        if i == 1:  # killed after the history's MERGE committed, before its checkpoint did
            killed = materialize_in_child(
                tmp_path, "*", fault="accounts_history:after_table_write", location=("-m", LOCATION)
            )
            assert killed.killed, killed.output[-3000:]
        result = dg.materialize(list(defs.assets or []), resources=defs.resources, instance=instance, selection="*")
        assert result.success
        assert not (root / "landing").exists()  # nothing landed under the root; every table is there

        def table(name: str):
            return spark.read.format("delta").load(str(root / "tables" / name))

        kept = sorted(o for o, _, a in orders if a > 0)
        assert sorted(r.order_id for r in table("orders").collect()) == kept
        # the sink got every order once, over both rounds (exactly once: Delta's streaming sink)
        assert sorted(r.order_id for r in spark.read.format("delta").load(str(export)).collect()) == kept
        revenue: dict[str, float] = defaultdict(float)
        for _, c, a in orders:
            if a > 0:
                revenue[c] += a
        assert {r.customer_id: r.revenue for r in table("revenue").collect()} == {
            c: round(v, 2) for c, v in revenue.items()
        }
        latest = {c: t for c, t, _ in sorted(changes, key=lambda x: x[2])}
        current = {r.customer_id: r.tier for r in table("customers").where("is_current").collect()}
        assert current == latest
        assert table("customers").count() == len(changes)  # one version per change: SCD type 2

        # Auto CDC from the view over raw payment files, through the changes table it keeps.
        assert sorted(tuple(r) for r in table("accounts_history_changes").select("account", "seq").collect()) == sorted(
            (a, q) for a, _, q, _ in paid
        )
        last = {a: (b, op) for a, b, _, op in sorted(paid, key=lambda p: p[2])}
        history = table("accounts_history")
        assert {r.account: r.balance for r in history.where("is_current").collect()} == {
            a: b for a, (b, op) in last.items() if op != "DELETE"
        }
        assert history.count() == sum(op != "DELETE" for *_, op in paid)  # a version per upsert
        assert "op" not in history.columns
        # The SQL file: AUTO CDC INTO (SCD 1) and APPLY CHANGES INTO (SCD 2, history of tier only).
        assert {r.customer_id: r.tier for r in table("tier_latest").collect()} == latest
        tiers = defaultdict(list)
        for c, t, _ in sorted(changes, key=lambda x: x[2]):
            if not tiers[c] or tiers[c][-1] != t:
                tiers[c].append(t)
        stored = table("tier_history")
        assert stored.count() == sum(len(v) for v in tiers.values()) and "ts" not in stored.columns
        assert {r.customer_id: r.tier for r in stored.where("is_current").collect()} == latest
