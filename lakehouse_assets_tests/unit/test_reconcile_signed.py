"""Which ``reconciles_with`` aggregates can follow a change data feed, and the aggregate of the
signed changes each becomes. Spark-free: the expressions are text here; the pipeline's check
tests run them."""

from __future__ import annotations

import pytest

from lakehouse_assets.lib.engine.checks.reconcile import signed

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("declared", "change"),
    [
        ("sum(revenue)", "sum((revenue) * _sign)"),
        ("  SUM( amount * 2 ) ", "sum((amount * 2) * _sign)"),
        ("count(*)", "sum(_sign)"),
        ("count(user_id)", "sum(CASE WHEN (user_id) IS NOT NULL THEN _sign ELSE 0 END)"),
        ("count_if(event_type = 'purchase')", "sum(CASE WHEN (event_type = 'purchase') THEN _sign ELSE 0 END)"),
        (
            "sum(amount) FILTER (WHERE event_type = 'purchase' AND user_id IS NOT NULL)",
            "sum((amount) * _sign) FILTER (WHERE event_type = 'purchase' AND user_id IS NOT NULL)",
        ),
        ("sum(coalesce(a, 0))", "sum((coalesce(a, 0)) * _sign)"),
        ("count_if(note = 'a ) b')", "sum(CASE WHEN (note = 'a ) b') THEN _sign ELSE 0 END)"),
    ],
)
def test_an_additive_aggregate_becomes_the_sum_of_its_signed_changes(declared: str, change: str) -> None:
    assert signed(declared) == change


@pytest.mark.parametrize(
    "declared",
    [
        "sum(a) + sum(b)",  # arithmetic on aggregates
        "sum(a) / 100",
        "count(DISTINCT user_id)",
        "count(a, b)",  # several arguments: rows where all are set
        "avg(amount)",
        "max(amount)",
        "sum()",
        "sum(a) FILTER (WHERE b) + 1",
        "sum(a",
        "coalesce(sum(a), 0)",
    ],
)
def test_anything_else_is_left_to_a_full_scan(declared: str) -> None:
    assert signed(declared) is None
