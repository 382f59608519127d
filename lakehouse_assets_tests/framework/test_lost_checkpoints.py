"""A lost ``append_flow`` checkpoint is refused, with real queries: the table with a flow runs
twice (the second time as a deployment upgraded from before the markers), the flow's checkpoint
folder is deleted, and the next run stops in one sentence before any flow writes; a flow declared
later on a table that holds rows starts and reads its input; a full refresh then rebuilds every
flow and the rows are exactly the lines landed."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from lakehouse_assets.lib import LakehouseError, LakehousePaths, append_flow, landing, streaming_table
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.engine.state.checkpoint import started_marker


@streaming_table(group="test", inputs={"lines": landing("a")}, flows=[append_flow("b", inputs={"lines": landing("b")})])
def letters(lines: DataFrame) -> DataFrame:
    return lines.select("value")


def land(paths: LakehousePaths, source: str, line: str) -> str:
    folder = Path(paths.landing(source))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"_{line}.txt").write_text(line + "\n")
    (folder / f"_{line}.txt").rename(folder / f"{line}.txt")  # complete files appear by rename
    return line


def rows(spark: SparkSession, paths: LakehousePaths) -> list[str]:
    return sorted(r.value for r in spark.read.format("delta").load(paths.table("letters")).collect())


def test_a_lost_flow_checkpoint_is_refused_and_a_new_flow_starts(tmp_path: Path, spark: SparkSession) -> None:
    paths = LakehousePaths(str(tmp_path))
    landed = [land(paths, "a", "a1"), land(paths, "b", "b1")]
    run_table(spark, paths, letters)
    # As if the first run was made before the markers existed: the next run records them.
    shutil.rmtree(paths.checkpoint(".started"))
    landed += [land(paths, "a", "a2"), land(paths, "b", "b2")]
    run_table(spark, paths, letters)
    flow_b = letters.flow_runs()[1]
    assert Path(started_marker(paths, flow_b)).is_file()
    assert rows(spark, paths) == sorted(landed)

    # A flow declared now, on a table that holds rows, has no checkpoint yet: it starts.
    with_c = replace(letters, flows=[*letters.flows, append_flow("c", inputs={"lines": landing("c")})])
    landed.append(land(paths, "c", "c1"))
    run_table(spark, paths, with_c)
    assert rows(spark, paths) == sorted(landed)

    shutil.rmtree(paths.checkpoint("letters/flows/b"))
    landed += [land(paths, "a", "a3"), land(paths, "b", "b3")]
    with pytest.raises(LakehouseError) as refused:
        run_table(spark, paths, with_c)
    message = str(refused.value)
    assert message.startswith(f"letters (flow b): its checkpoint is missing ({paths.checkpoint('letters/flows/b')})")
    assert message.endswith(
        "run a full refresh of letters (run config ops: {letters: {config: {full_refresh: true}}}) to rebuild it."
    )
    # Unchanged: not even the table's own flow, which has a3 to read, ran.
    assert rows(spark, paths) == ["a1", "a2", "b1", "b2", "c1"]

    run_table(spark, paths, with_c, full_refresh_first=True)
    assert rows(spark, paths) == sorted(landed)
