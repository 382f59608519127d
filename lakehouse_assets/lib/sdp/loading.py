"""Loading a Spark Declarative Pipelines project: its spec, then its files, as ``spark-pipelines``
loads them.

The spec is read by pyspark's own ``load_pipeline_spec`` (same fields, same glob rules). Each
``libraries`` file is imported from the spec's folder with a global ``spark`` (here a
:class:`~.spark_proxy.SessionProxy`) while pyspark's graph-element registry points at a
:class:`~.graph.PipelineGraph`. ``dp.create_auto_cdc_flow`` is this project's meanwhile, so a
file may ask for ``stored_as_scd_type=2`` (pyspark's refuses anything but 1), and ``import dlt``
gives Lakeflow's names (:mod:`~.lakeflow`), so Databricks pipeline code loads as written.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark.pipelines as pyspark_dp
from pyspark.pipelines.cli import PipelineSpec, load_pipeline_spec
from pyspark.pipelines.graph_element_registry import graph_element_registration_context

from lakehouse_assets.lib.errors import DeclarationError, LakehouseError
from lakehouse_assets.lib.sdp import api as lakehouse_dp
from lakehouse_assets.lib.sdp.graph import PipelineGraph
from lakehouse_assets.lib.sdp.lakeflow import importable_as_dlt
from lakehouse_assets.lib.sdp.spark_proxy import SPARK
from lakehouse_assets.lib.sdp.sql_files import register_sql_file


@dataclass(frozen=True)
class LoadedPipeline:
    spec_path: Path
    spec: PipelineSpec
    configuration: Mapping[str, str]
    graph: PipelineGraph


def read_spec(spec_path: Path) -> tuple[PipelineSpec, dict[str, str]]:
    """The spec and its configuration, with ``$VARIABLES`` in values expanded from the
    environment (so a spec can say ``${LAKEHOUSE_ROOT}/landing/orders``)."""
    if not spec_path.is_file():
        raise DeclarationError(f"no pipeline spec at {spec_path}")
    try:
        spec = load_pipeline_spec(spec_path)
    except Exception as error:  # noqa: BLE001 - pyspark's own error, one line with the file's name
        raise DeclarationError(f"{spec_path}: {error}") from None
    return spec, {k: os.path.expandvars(v) for k, v in spec.configuration.items()}


def library_files(spec_path: Path, spec: PipelineSpec) -> list[Path]:
    folder = spec_path.parent.resolve()
    files: list[Path] = []
    for library in spec.libraries:
        matched = sorted(p for p in folder.glob(library.include) if p.is_file() and "__pycache__" not in p.parts)
        files += [p for p in matched if p not in files]
    return files


def files_state(spec_path: Path, spec: PipelineSpec) -> tuple[tuple[str, int, int, int], ...]:
    """The spec's and its library files' (path, inode, modification time, size): what a load of
    the pipeline follows from on disk, so a file edited or replaced since shows."""
    stats = [(str(p), p.stat()) for p in [spec_path, *library_files(spec_path, spec)]]
    return tuple((name, s.st_ino, s.st_mtime_ns, s.st_size) for name, s in stats)


@contextmanager
def _lakehouse_auto_cdc() -> Iterator[None]:
    """pyspark's ``dp`` with this project's Auto CDC and ``append_flow`` (``once``), and
    ``dp.streaming_table`` (the tutorials' name of a streaming ``dp.table``), while the files load."""
    original, original_flow = pyspark_dp.create_auto_cdc_flow, pyspark_dp.append_flow
    pyspark_dp.create_auto_cdc_flow = lakehouse_dp.create_auto_cdc_flow  # type: ignore[assignment]
    pyspark_dp.append_flow = lakehouse_dp.append_flow
    had_streaming_table = hasattr(pyspark_dp, "streaming_table")
    if not had_streaming_table:
        pyspark_dp.streaming_table = pyspark_dp.table  # type: ignore[attr-defined]
    try:
        yield
    finally:
        pyspark_dp.create_auto_cdc_flow, pyspark_dp.append_flow = original, original_flow
        if not had_streaming_table:
            del pyspark_dp.streaming_table  # type: ignore[attr-defined]


@contextmanager
def _in_folder(folder: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def _import(file: Path) -> None:
    module_spec = importlib.util.spec_from_file_location(file.stem, str(file))
    assert module_spec is not None and module_spec.loader is not None, f"cannot import {file}"
    module = importlib.util.module_from_spec(module_spec)
    module.__dict__["spark"] = SPARK
    try:
        module_spec.loader.exec_module(module)
    except LakehouseError:
        raise
    except Exception as error:
        raise DeclarationError(f"{file}: loading it failed: {type(error).__name__}: {error}") from error


def load_graph(spec_path: Path, spec: PipelineSpec, configuration: Mapping[str, str]) -> LoadedPipeline:
    """Import the files of the pipeline (:func:`read_spec` gave ``spec`` and ``configuration``)
    and return what they declared. The caller chooses the session they build plans with
    (:func:`~.spark_proxy.planning` or :func:`~.spark_proxy.running_on`, given ``configuration``)."""
    spec_path = spec_path.resolve()
    graph = PipelineGraph(sql_registrar=register_sql_file)
    with (
        _in_folder(spec_path.parent),
        graph_element_registration_context(graph),
        _lakehouse_auto_cdc(),
        importable_as_dlt(),
    ):
        for file in library_files(spec_path, spec):
            if file.suffix == ".py":
                _import(file)
            elif file.suffix == ".sql":
                graph.register_sql(file.read_text(), file)
            else:
                raise DeclarationError(f"{file}: a pipeline library is a .py or .sql file")
    return LoadedPipeline(spec_path, spec, configuration, graph)
