"""Databricks Auto Loader (``spark.readStream.format("cloudFiles")``) in a pipeline's code, read
by the engine's landed-file machinery (JSON, CSV, Parquet, Avro): inferred schema kept with the checkpoint, evolution modes,
hints and the rescued data column, from wherever the code's path points.

While the definitions load, each ``cloudFiles`` read in a flow's plan becomes a landing input
of its table, keyed ``cloudFiles:<path>``; at run time ``format("cloudFiles")...load(path)``
returns the frame the engine read for that key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from lakehouse_assets.lib.declare.inputs import (
    EVOLVING_FORMATS,
    SCHEMA_EVOLUTION_MODES,
    LandingFormat,
    LandingInput,
    landing,
)
from lakehouse_assets.lib.declare.parsing import RESCUED
from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.plan_reading import FileRead

CLOUD_FILES = "cloudfiles"
KEY_PREFIX = "cloudFiles:"
# Options that say where Databricks keeps state or how it discovers files: meaningless here,
# where the schema lives with the table's checkpoint and files are listed.
_IGNORED = {"schemalocation", "includeexistingfiles", "usenotifications", "validateoptions", "useincrementallisting"}


def is_auto_loader(read: FileRead) -> bool:
    return read.format.lower() == CLOUD_FILES


def input_key(path: str) -> str:
    return KEY_PREFIX + path


def auto_loader_input(read: FileRead, place: str) -> LandingInput:
    """The landing input that reads what ``read`` (a ``cloudFiles`` stream) names.

    :param read: the file read found in the flow's plan.
    :param place: ``file:line`` of the flow, for messages.
    """
    if len(read.paths) != 1:
        raise DeclarationError(f"{place}: an Auto Loader read loads one folder, not {list(read.paths)}")
    options = dict(read.options)
    cloud = {k[len("cloudFiles.") :].lower(): v for k, v in options.items() if k.lower().startswith("cloudfiles.")}
    plain = {k: v for k, v in options.items() if not k.lower().startswith("cloudfiles.")}
    file_format = (cloud.pop("format", None) or "").lower()
    if file_format not in EVOLVING_FORMATS:
        raise DeclarationError(
            f"{place}: Auto Loader reads cloudFiles.format 'json' (one object per line), 'csv', 'parquet' or "
            f"'avro' here, not {file_format or None!r}"
        )
    mode = cloud.pop("schemaevolutionmode", None)
    if mode is not None and mode not in SCHEMA_EVOLUTION_MODES:
        raise DeclarationError(
            f"{place}: cloudFiles.schemaEvolutionMode {mode!r} is not one of {SCHEMA_EVOLUTION_MODES}"
        )
    hints = cloud.pop("schemahints", None)
    infer_types = cloud.pop("infercolumntypes", "false").lower() == "true"
    cloud.pop("rescueddatacolumn", None)  # renamed at run time
    clean = _clean_source(cloud, place)
    reader_options = {}
    if "maxfilespertrigger" in cloud:
        reader_options["maxFilesPerTrigger"] = cloud.pop("maxfilespertrigger")
    unknown = sorted(set(cloud) - _IGNORED)
    if unknown or (file_format == "json" and plain.get("multiLine", "false").lower() == "true"):
        raise DeclarationError(
            f"{place}: Auto Loader option(s) {', '.join(unknown) or 'multiLine'} are not supported here; "
            "supported: cloudFiles.format=json|csv|parquet|avro, schemaEvolutionMode, schemaHints, inferColumnTypes, "
            "rescuedDataColumn, maxFilesPerTrigger, cleanSource (with retentionDuration, moveDestination), pathGlobFilter"
        )
    glob = plain.pop("pathGlobFilter", "*")
    reader_options.update({k: v for k, v in plain.items() if k != "multiLine" or file_format == "csv"})
    if file_format == "csv" and not any(k.lower() == "header" for k in reader_options):
        reader_options["header"] = "false"  # Databricks' default: the first line is a record
    declared = landing(
        read.paths[0].rstrip("/").rsplit("/", 1)[-1] or read.paths[0],
        format=cast(LandingFormat, file_format),  # one of EVOLVING_FORMATS, checked above
        glob=glob,
        options=reader_options,
        schema=read.schema,
        schema_hints=hints,
        schema_evolution=mode,  # type: ignore[arg-type]
        **clean,
    )
    # Databricks infers column types of JSON and CSV only when asked (inferColumnTypes).
    return replace(declared, path=read.paths[0], infer_column_types=infer_types or file_format not in ("json", "csv"))


def _clean_source(cloud: dict[str, str], place: str) -> dict[str, Any]:
    """``cloudFiles.cleanSource`` (``OFF``, ``DELETE``, ``MOVE``) as ``landing()``'s retention:
    ``DELETE`` deletes a file ``retentionDuration`` (default 30 days) after its commit, as on
    Databricks; ``MOVE`` moves it into ``moveDestination`` at the next run (Databricks waits
    ``retentionDuration`` first), kept there for good. The options are taken from ``cloud``."""
    mode = cloud.pop("cleansource", "OFF").upper()
    retention = cloud.pop("cleansource.retentionduration", None)
    destination = cloud.pop("cleansource.movedestination", None)
    if mode == "OFF":
        return {}
    if mode == "DELETE":
        return {"clean_source": "delete", "retention": retention or "30 days"}
    if mode == "MOVE" and destination:
        return {"clean_source": "archive", "archive_path": destination}
    raise DeclarationError(
        f"{place}: cloudFiles.cleanSource is OFF, DELETE or MOVE (with cloudFiles.cleanSource.moveDestination), "
        f"not {mode!r}" + (" without a moveDestination" if mode == "MOVE" else "")
    )


class AutoLoaderReader:
    """``spark.readStream.format("cloudFiles")`` at run time: options are taken as declared,
    ``load(path)`` is the frame the engine read for the path."""

    def __init__(self, frames: Mapping[str, Any]) -> None:
        self._frames = frames
        self._rescued = RESCUED

    def option(self, key: str, value: Any) -> AutoLoaderReader:
        if key.lower() == "cloudfiles.rescueddatacolumn":
            self._rescued = str(value)
        return self

    def options(self, **options: Any) -> AutoLoaderReader:
        for key, value in options.items():
            self.option(key, value)
        return self

    def schema(self, schema: Any) -> AutoLoaderReader:
        return self

    def load(self, path: str) -> Any:
        frame = self._frames[input_key(path)]
        return frame if self._rescued == RESCUED else frame.withColumnRenamed(RESCUED, self._rescued)
