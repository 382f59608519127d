"""A step retries a table while the engine has a passing fault; once one table of a run has
given up on an unreachable engine, the run's next tables try once, so a run whose engine is
gone for good fails in one wait instead of one per independent table. Spark-free: the
attempts raise what a Spark Connect client raises when its engine is gone."""

from __future__ import annotations

import pytest

from lakehouse_assets.lib.errors import EngineUnavailable
from lakehouse_assets.lib.orchestrate import retries
from lakehouse_assets.lib.spark.session import EngineWatch

pytestmark = pytest.mark.unit

GONE = "<_InactiveRpcError: status = StatusCode.UNAVAILABLE, details = failed to connect: Connection refused>"


@pytest.fixture(autouse=True)
def engine_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:1")
    monkeypatch.setenv("LAKEHOUSE_TRANSIENT_TRIES", "3")
    monkeypatch.setenv("LAKEHOUSE_TRANSIENT_BACKOFF_SECONDS", "0")


def _attempts(outcomes: list[BaseException | int]):
    calls: list[int] = []

    def attempt(session: object) -> int:
        calls.append(1)
        outcome = outcomes[min(len(calls), len(outcomes)) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return attempt, calls


def test_after_one_table_gave_up_the_next_tries_once_until_the_engine_answers() -> None:
    watch = EngineWatch()  # the run's Spark resource owns it
    warnings: list[str] = []
    gone, calls = _attempts([RuntimeError(GONE)])
    with pytest.raises(EngineUnavailable, match=r"orders: the Spark engine .* gave up after 3 tries"):
        retries.retrying("orders", gone, None, warnings.append, watch=watch)  # type: ignore[arg-type]
    assert len(calls) == 3 and len(warnings) == 2

    gone_again, calls = _attempts([RuntimeError(GONE)])
    with pytest.raises(EngineUnavailable, match=r"customers: .*not tried again"):
        retries.retrying("customers", gone_again, None, warnings.append, watch=watch)  # type: ignore[arg-type]
    assert len(calls) == 1

    assert retries.retrying("clicks", _attempts([7])[0], None, warnings.append, watch=watch) == (None, 7)  # type: ignore[arg-type]
    back_then_gone, calls = _attempts([RuntimeError(GONE)])
    with pytest.raises(EngineUnavailable, match="gave up after 3 tries"):
        retries.retrying("orders", back_then_gone, None, warnings.append, watch=watch)  # type: ignore[arg-type]
    assert len(calls) == 3


def test_a_busy_machine_is_not_giving_up_on_the_engine() -> None:
    reset, calls = _attempts([RuntimeError("Connection reset by peer")])
    with pytest.raises(EngineUnavailable, match="reset; gave up after 3 tries"):
        retries.retrying("orders", reset, None, lambda _: None)  # type: ignore[arg-type]
    recovers, calls = _attempts([RuntimeError(GONE), 5])
    assert retries.retrying("customers", recovers, None, lambda _: None) == (None, 5)  # type: ignore[arg-type]
    assert len(calls) == 2


def test_another_run_remembers_nothing_of_this_ones_engine() -> None:
    gone, _ = _attempts([RuntimeError(GONE)])
    with pytest.raises(EngineUnavailable, match="gave up after 3 tries"):
        retries.retrying("orders", gone, None, lambda _: None, watch=EngineWatch())  # type: ignore[arg-type]
    gone_again, calls = _attempts([RuntimeError(GONE)])
    with pytest.raises(EngineUnavailable, match="gave up after 3 tries"):
        retries.retrying("orders", gone_again, None, lambda _: None, watch=EngineWatch())  # type: ignore[arg-type]
    assert len(calls) == 3
