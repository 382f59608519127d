"""Calling each flow's function once, with a plan-only session, for what it reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import Message
from pyspark.pipelines.flow import Flow

from lakehouse_assets.lib.engine.errors import short_error
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.sdp.graph import where
from lakehouse_assets.lib.sdp.loading import LoadedPipeline, load_graph, read_spec
from lakehouse_assets.lib.sdp.plan_reading import Reads, incremental_keys, plan_of, reads_of
from lakehouse_assets.lib.sdp.spark_proxy import planning


@dataclass(frozen=True)
class Planned:
    flow: Flow
    reads: Reads
    incremental: tuple[list[str], str] | None
    plan: Message


def load_and_plan(spec_path: Path) -> tuple[LoadedPipeline, dict[tuple[str, str], Planned]]:
    """Import the pipeline's files with a plan-only session and plan every flow."""
    spec, configuration = read_spec(spec_path.resolve())
    with planning(configuration) as planner:
        # Nothing answers: a function that needs a server fails now instead of retrying.
        planner.client.set_retry_policies([])
        loaded = load_graph(spec_path, spec, configuration)
        return loaded, _plan(loaded)


def _plan(loaded: LoadedPipeline) -> dict[tuple[str, str], Planned]:
    planned: dict[tuple[str, str], Planned] = {}
    for flow in loaded.graph.flows:
        place = where(flow.source_code_location)
        try:
            df = flow.func()
        except LakehouseError:
            raise
        except Exception as error:  # noqa: BLE001 - the user's code: one sentence naming it
            raise LakehouseError(
                f"{place}: {flow.target}: its function failed while building its query ({short_error(error)}); "
                "a pipeline function only builds a DataFrame (no action, no schema lookup)"
            ) from None
        if not hasattr(df, "_plan"):
            raise LakehouseError(f"{place}: {flow.target}: the function returns {type(df).__name__}, not a DataFrame")
        plan = plan_of(df)
        reads = reads_of(plan)
        for table in reads.tables:
            if table.options:
                raise LakehouseError(
                    f"{place}: {flow.target} reads {table.name} with options {dict(table.options)}; a dataset is read "
                    "as the engine reads it (spark.read.table / spark.readStream.table without options)"
                )
        planned[(flow.target, flow.name)] = Planned(flow, reads, incremental_keys(plan), plan)
    return planned
