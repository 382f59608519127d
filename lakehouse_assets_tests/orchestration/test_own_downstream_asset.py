"""A user's own asset downstream of a gold table: a plain ``@dg.asset`` with
``AutomationCondition.eager()`` merged into the code location runs after the gold table
updates (through the automation sensor the project turns on), and automation never requests
one of the streaming tables (they have one writer: their own jobs)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from lakehouse_assets.definitions import TABLES, build_definitions
from lakehouse_assets.lib import LakehousePaths
from lakehouse_assets.lib.orchestrate.code_location import AUTOMATION_SENSOR

pytestmark = pytest.mark.unit


@dg.asset(deps=["gold_hourly_revenue"], automation_condition=dg.AutomationCondition.eager())
def revenue_report() -> None:
    """A report of the user's own, built from gold_hourly_revenue."""


def test_an_eager_asset_of_your_own_runs_after_the_gold_table_and_nothing_else_is_requested(tmp_path: Path) -> None:
    defs = dg.Definitions.merge(
        build_definitions(LakehousePaths(str(tmp_path / "lakehouse"))), dg.Definitions(assets=[revenue_report])
    )
    sensor = defs.resolve_sensor_def(AUTOMATION_SENSOR)
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    tables = {key for t in TABLES for key in (t.name, t.quarantine.table if t.quarantine else t.name)}
    with dg.instance_for_test() as instance:
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert first.total_requested == 0  # gold has never been materialized
        instance.report_runless_asset_event(dg.AssetMaterialization("gold_hourly_revenue"))
        after_gold = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
        assert after_gold.total_requested == 1
        assert after_gold.get_num_requested(dg.AssetKey("revenue_report")) == 1
        assert all(after_gold.get_num_requested(dg.AssetKey(t)) == 0 for t in tables)
        quiet = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=after_gold.cursor)
        assert quiet.total_requested == 0  # requested once per gold update
