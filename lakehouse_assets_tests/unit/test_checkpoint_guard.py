"""The missing-checkpoint guard's markers, on files alone: a sink, a further flow and a once-flow
whose checkpoint made progress and is then gone are refused in one sentence naming the full
refresh; one that never planned a batch, one from before the markers and one after a full
refresh are not. (With Spark and real queries: ``framework/test_lost_checkpoints.py``.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import DataFrame

from lakehouse_assets.lib import LakehouseError, LakehousePaths, append_flow, static, stream, streaming_table, to_kafka
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.state.checkpoint import full_refresh, started_marker
from lakehouse_assets.lib.engine.state.checkpoint_guard import guard_checkpoint, remember_progress

pytestmark = pytest.mark.unit
NO_SPARK = None  # the guard looks at rows only for a Delta table's own flow; none of these has one


def publish(orders: DataFrame) -> DataFrame:
    return orders


def planned(paths: LakehousePaths, flow: TableSpec, batches: int) -> Path:
    """A query checkpoint as Spark leaves it: metadata at the start, an offsets file per batch."""
    query = Path(paths.checkpoint(flow.checkpoint_name)) / "query"
    (query / "offsets").mkdir(parents=True, exist_ok=True)
    (query / "metadata").write_text('{"id":"q"}')
    for batch in range(batches):
        (query / "offsets" / str(batch)).write_text("v1\n{}\n{}")
    return query


def refused(paths: LakehousePaths, flow: TableSpec) -> str:
    with pytest.raises(LakehouseError) as caught:
        guard_checkpoint(NO_SPARK, paths, flow)  # type: ignore[arg-type]
    return str(caught.value)


def test_a_sink_whose_checkpoint_is_gone_is_refused_until_a_full_refresh(tmp_path: Path) -> None:
    paths = LakehousePaths(str(tmp_path))
    sink = streaming_table(group="g", inputs={"orders": stream("orders")}, sink=to_kafka("out", key=["id"]))(publish)
    guard_checkpoint(NO_SPARK, paths, sink)  # type: ignore[arg-type]  # new: it starts
    planned(paths, sink, batches=2)  # a checkpoint from before the markers...
    guard_checkpoint(NO_SPARK, paths, sink)  # type: ignore[arg-type]  # ...runs, and gets its marker
    assert Path(started_marker(paths, sink)).is_file()

    shutil.rmtree(paths.checkpoint("publish"))
    message = refused(paths, sink)
    assert message.startswith(f"publish: its checkpoint is missing ({paths.checkpoint('publish')}) but it ran before")
    assert message.endswith(
        "run a full refresh of publish (run config ops: {publish: {config: {full_refresh: true}}}) to rebuild it."
    )
    assert message.count(". ") == 0  # one sentence

    full_refresh(NO_SPARK, paths, sink, log=lambda line: None)  # type: ignore[arg-type]  # no Delta output to empty
    guard_checkpoint(NO_SPARK, paths, sink)  # type: ignore[arg-type]
    assert not Path(started_marker(paths, sink)).exists()


def test_a_flow_is_refused_only_once_it_has_planned_a_batch(tmp_path: Path) -> None:
    paths = LakehousePaths(str(tmp_path))
    table = streaming_table(
        group="g",
        inputs={"orders": stream("orders")},
        flows=[append_flow("late", inputs={"orders": stream("late_orders")})],
    )(publish)
    own, late = table.flow_runs()
    query = planned(paths, late, batches=0)  # started, killed before it planned anything
    remember_progress(paths, late)
    shutil.rmtree(query.parent)
    guard_checkpoint(NO_SPARK, paths, late)  # type: ignore[arg-type]  # nothing was read: it may start again

    planned(paths, late, batches=1)
    remember_progress(paths, late)  # after its query ran
    shutil.rmtree(query.parent)
    assert refused(paths, late).startswith("publish (flow late): its checkpoint is missing")
    assert not Path(started_marker(paths, own)).exists()  # each flow has its own marker


def test_a_backfill_whose_folder_is_gone_is_not_run_twice(tmp_path: Path) -> None:
    paths = LakehousePaths(str(tmp_path))
    table = streaming_table(
        group="g",
        inputs={"orders": stream("orders")},
        flows=[append_flow("old", inputs={"orders": static("old_orders")}, once=True)],
    )(publish)
    backfill = table.flow_runs()[1]
    guard_checkpoint(NO_SPARK, paths, backfill)  # type: ignore[arg-type]  # not run yet
    done = Path(paths.checkpoint(backfill.checkpoint_name)) / "once-done"
    done.parent.mkdir(parents=True)
    done.write_text("done\n")  # done before the markers existed
    guard_checkpoint(NO_SPARK, paths, backfill)  # type: ignore[arg-type]
    done.unlink()
    assert refused(paths, backfill).startswith("publish (flow old): its checkpoint is missing")
