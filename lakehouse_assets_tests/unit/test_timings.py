"""The timing hook: listeners get every span with its table, time and details, and a listener
that fails neither fails the timed work nor hides the work's own error. Spark-free."""

from __future__ import annotations

import time

import pytest

from lakehouse_assets.lib import timings

pytestmark = pytest.mark.unit


def test_a_listener_gets_each_span_until_removed() -> None:
    got: list[timings.Span] = []
    remove = timings.add_listener(got.append)
    try:
        assert timings.listening()
        with timings.span("query", "orders") as details:
            time.sleep(0.05)
            details["progress"] = [{"numInputRows": 3}]
    finally:
        remove()
    with timings.span("query", "orders"):
        pass
    assert [(s.phase, s.table, s.details) for s in got] == [("query", "orders", {"progress": [{"numInputRows": 3}]})]
    assert got[0].seconds >= 0.05 and not timings.listening()


def test_a_failing_listener_neither_fails_the_work_nor_hides_its_error() -> None:
    def broken(span: timings.Span) -> None:
        raise RuntimeError("listener bug")

    remove = timings.add_listener(broken)
    try:
        with timings.span("run_table", "orders"):
            done = True
        assert done
        with pytest.raises(KeyError, match="the work's own error"), timings.span("run_table", "orders"):
            raise KeyError("the work's own error")
    finally:
        remove()
