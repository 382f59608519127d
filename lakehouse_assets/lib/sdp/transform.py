"""A pipeline function as a table's transform: what the engine calls when a run starts.

The engine reads each dataset the function reads (a stream from its checkpoint, a snapshot, or a
micro-batch's rows) and calls the transform with them by dataset name. The transform runs the
pipeline's files again in this process (once, and again after a file changed; module-level
code sees this run's session), makes ``spark.read.table(name)`` and
``spark.readStream.table(name)`` return those frames, computes the temporary views the function
reads, and calls the function unchanged. It pickles as its
names only, so a Spark Connect server's ``foreachBatch`` worker does the same on its side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from lakehouse_assets.lib.declare.file_streams import FileStream
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.sdp.auto_loader import is_auto_loader
from lakehouse_assets.lib.sdp.loading import LoadedPipeline, files_state, load_graph, read_spec
from lakehouse_assets.lib.sdp.plan_reading import file_streams_of, plan_of, reads_of
from lakehouse_assets.lib.sdp.spark_proxy import planning, running_on
from lakehouse_assets.lib.spark.deferred import run_session

# Each pipeline's files as this process last ran them, with what they were then (:func:`files_state`):
# a file edited since is loaded again, as a new code location would.
_LOADED: dict[str, tuple[tuple, LoadedPipeline]] = {}


def _runtime_pipeline(spec_path: str, session: Any) -> LoadedPipeline:
    spec, configuration = read_spec(Path(spec_path))
    state = files_state(Path(spec_path), spec)
    loaded = _LOADED.get(spec_path)
    if loaded is None or loaded[0] != state:
        with running_on(session, configuration):
            loaded = _LOADED[spec_path] = (state, load_graph(Path(spec_path), spec, configuration))
    return loaded[1]


def flow_function(pipeline: LoadedPipeline, target: str, flow: str) -> Callable[[], DataFrame]:
    for candidate in pipeline.graph.flows:
        if candidate.target == target and candidate.name == flow:
            return candidate.func
    raise LakehouseError(
        f"{pipeline.spec_path}: no flow {flow} into {target} any more (the files changed since the definitions loaded)"
    )


@dataclass(frozen=True)
class PipelineQuery:
    """The transform of one flow of a pipeline.

    :param spec_path: the pipeline's spec.
    :param target: the dataset the flow writes (or, with ``flow`` None, the dataset whose rows
        are the result: an Auto CDC flow's source).
    :param flow: the flow's name.
    :param views: the temporary views the flow reads, each after those it reads.
    :param defined_at: the file and line declaring the dataset (the asset's code reference).
    """

    spec_path: str
    target: str
    flow: str | None
    views: tuple[str, ...] = ()
    defined_at: tuple[str, int] | None = None

    def __call__(self, **frames: DataFrame) -> DataFrame:
        session = next(iter(frames.values())).sparkSession if frames else run_session()
        pipeline = _runtime_pipeline(self.spec_path, session)
        scope = dict(frames)
        with running_on(session, pipeline.configuration, scope):
            for view in self.views:
                scope[view] = flow_function(pipeline, view, view)()
            if self.flow is None:
                return scope[self.target]
            return flow_function(pipeline, self.target, self.flow)()

    def streamed_folders(self) -> tuple[FileStream, ...]:
        """The folders the flow's code and the views it reads stream now, planned again with a
        plan-only session (no Spark): the idle skip checks the path a run would read, even when
        the code computes it (from the date) and the definitions were loaded long ago."""
        spec, configuration = read_spec(Path(self.spec_path))
        with planning(configuration) as planner:
            planner.client.set_retry_policies([])
            # Loaded afresh with this planner: module-level code keeps the session it was loaded with.
            pipeline = load_graph(Path(self.spec_path), spec, configuration)
            functions = [flow_function(pipeline, view, view) for view in self.views]
            functions += [flow_function(pipeline, self.target, self.flow)] if self.flow is not None else []
            files = [f for fn in functions for f in reads_of(plan_of(fn())).files if not is_auto_loader(f)]
        return file_streams_of(files)
