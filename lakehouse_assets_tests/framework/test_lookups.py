"""Which lookup inputs the run names as stale, read from a real Dagster instance's run history
(plain Python assets stand in for the tables: what is tested is the reading of that history)."""

from __future__ import annotations

import dagster as dg
import pytest

from lakehouse_assets.lib.orchestrate.lookups import stale_lookups

FEEDS = {"lookup": ["lookup", "feed"]}
failure: dict[str, Exception | None] = {"feed": None}


@dg.asset
def feed() -> None:
    if failure["feed"] is not None:
        raise failure["feed"]


@dg.asset(deps=[feed])
def lookup() -> None:
    pass


def run(instance: dg.DagsterInstance, error: Exception | None) -> dg.ExecuteInProcessResult:
    failure["feed"] = error
    return dg.materialize([feed, lookup], instance=instance, raise_on_error=False)


@pytest.fixture
def instance():
    with dg.instance_for_test() as test_instance:
        yield test_instance


def test_a_failed_feed_is_named_until_the_lookup_is_materialized_again(instance: dg.DagsterInstance) -> None:
    assert stale_lookups(instance, FEEDS) == {}, "nothing ran yet: nothing to say"
    failed = run(instance, dg.Failure(description="feed: broken.csv has a wrong header"))
    assert not failed.success
    note = stale_lookups(instance, FEEDS)["lookup"]
    assert "not materialized yet" in note and f"feed failed to materialize in run {failed.run_id[:8]}" in note
    assert note.endswith("feed: broken.csv has a wrong header")

    assert run(instance, None).success
    assert stale_lookups(instance, FEEDS) == {}

    failed = run(instance, ValueError("boom in the feed"))
    note = stale_lookups(instance, FEEDS)["lookup"]
    assert "read at its last good version" in note and failed.run_id[:8] in note
    assert note.endswith("boom in the feed"), "the cause, not Dagster's 'Error occurred while executing'"


def test_a_run_still_queued_does_not_hide_an_earlier_failure(instance: dg.DagsterInstance) -> None:
    assert run(instance, None).success
    failed = run(instance, dg.Failure(description="bad header"))
    job = dg.Definitions(assets=[feed, lookup]).resolve_implicit_global_asset_job_def()
    queued = instance.create_run_for_job(job, asset_selection=frozenset({dg.AssetKey("feed"), dg.AssetKey("lookup")}))
    assert instance.get_run_by_id(queued.run_id).status == dg.DagsterRunStatus.NOT_STARTED
    assert failed.run_id[:8] in stale_lookups(instance, FEEDS)["lookup"]
