"""Exactly once under crashes: SIGKILL the whole run at random and at the dangerous instants,
rerun, and compare every table with the answer computed from the landed files."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.settings import LakehousePaths
from lakehouse_assets_tests.conftest import Lakehouse
from lakehouse_assets_tests.contract import assert_tables_match_landed_files
from lakehouse_assets_tests.crash import materialize_in_child

CHAIN = "bronze_events,bronze_events_quarantine,silver_events,silver_events_quarantine,gold_hourly_revenue"
START = datetime(2026, 11, 20, 6, tzinfo=UTC)

pytestmark = pytest.mark.slow


def land(root: Path, seed: int) -> None:
    options = GeneratorOptions(files=2, rows=150, seed=seed, start=START, duplicate=0.1, bad_lines=0.05, late=0.2)
    generate(LakehousePaths(str(root / "lakehouse")), options, ["events"])


def test_kills_at_the_dangerous_instants_lose_and_duplicate_nothing(tmp_path: Path, spark) -> None:
    faults = ("bronze_events:after_table_write", "silver_events:after_table_write",
              "gold_hourly_revenue:after_table_write", "bronze_events:after_batch_writes")  # fmt: skip
    for seed, fault in enumerate(faults):
        land(tmp_path, seed=21 + seed)  # new data, so the query reaches the fault point
        outcome = materialize_in_child(tmp_path, CHAIN, fault=fault)
        assert outcome.killed, f"{fault} did not fire:\n{outcome.output}"
    final = materialize_in_child(tmp_path, CHAIN)
    assert final.returncode == 0, final.output
    assert_tables_match_landed_files(Lakehouse(tmp_path / "lakehouse", spark, None))  # type: ignore[arg-type]


def test_random_kills_across_landing_rounds(tmp_path: Path, spark) -> None:
    rng = random.Random(7)
    kills = 0
    for round_number in range(2):
        land(tmp_path, seed=30 + round_number)
        for _ in range(2):
            outcome = materialize_in_child(tmp_path, CHAIN, kill_after=rng.uniform(8, 40))
            kills += outcome.killed
        final = materialize_in_child(tmp_path, CHAIN)
        assert final.returncode == 0, final.output
        assert_tables_match_landed_files(Lakehouse(tmp_path / "lakehouse", spark, None))  # type: ignore[arg-type]
    assert kills >= 2, "the random instants should have hit running materializations"
