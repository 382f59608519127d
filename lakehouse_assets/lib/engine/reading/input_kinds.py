"""What the engine reads for each kind of input: one registered reader per
:attr:`kind <lakehouse_assets.lib.declare.inputs.LandingInput.kind>` (landing files, Kafka topics,
upstream Delta tables, catalog tables). A run asks the reader of each input and never tells inputs
apart by their type; a new kind of input is a new entry here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lakehouse_assets.lib.declare.inputs import CatalogInput, Input, KafkaInput, LandingInput, TableInput
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.reading.kafka_input import read_kafka
from lakehouse_assets.lib.engine.reading.read import read_catalog_table, read_landing, read_table
from lakehouse_assets.lib.engine.schema.csv_layout import reading_plan
from lakehouse_assets.lib.engine.schema.landing_schema import evolve_schema, schema_folder, stored_schema
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths

Log = Callable[[str], None]
# Reads one input: the session, the data root, the table reading it, the parameter, the input, the log.
InputReader = Callable[[SparkSession, LakehousePaths, TableSpec, str, Any, Log], DataFrame]


def _landing(
    spark: SparkSession, paths: LakehousePaths, table: TableSpec, param: str, source: LandingInput, log: Log
) -> DataFrame:
    schema = None
    if source.infers_schema:
        recorded = stored_schema(paths, table, param)
        if recorded is None:
            evolve_schema(spark, paths, table, param, source, log)
            recorded = stored_schema(paths, table, param)
        schema = recorded.columns if recorded else None
    plan = None
    if source.format == "csv" and source.infers_schema:
        plan = reading_plan(schema_folder(paths, table, param), list(schema or {}))
    return read_landing(spark, paths, source, log, schema, plan)


def _kafka(
    spark: SparkSession, paths: LakehousePaths, table: TableSpec, param: str, source: KafkaInput, log: Log
) -> DataFrame:
    return read_kafka(spark, source, table)


def _catalog(
    spark: SparkSession, paths: LakehousePaths, table: TableSpec, param: str, source: CatalogInput, log: Log
) -> DataFrame:
    return read_catalog_table(spark, paths, source, table.name)


def _table(
    spark: SparkSession, paths: LakehousePaths, table: TableSpec, param: str, source: TableInput, log: Log
) -> DataFrame:
    return read_table(spark, paths, source, table.name)


INPUT_READERS: dict[str, InputReader] = {
    LandingInput.kind: _landing,
    KafkaInput.kind: _kafka,
    CatalogInput.kind: _catalog,
    TableInput.kind: _table,
}


def reader_for(source: Input) -> InputReader:
    """The reader registered for ``source``'s kind.

    :raises LakehouseError: none is registered for it.
    """
    try:
        return INPUT_READERS[source.kind]
    except KeyError:
        raise LakehouseError(
            f"the engine has no reader for inputs of kind {source.kind!r} ({type(source).__name__}); "
            f"known kinds: {', '.join(sorted(INPUT_READERS))}"
        ) from None


def read_inputs(spark: SparkSession, paths: LakehousePaths, table: TableSpec, log: Log) -> dict[str, DataFrame]:
    """Each parameter of the table's function and the DataFrame it reads.

    :param spark: the session.
    :param paths: the data root.
    :param table: the table (or flow) whose inputs are read.
    :param log: where progress lines go.
    """
    return {
        param: reader_for(source)(spark, paths, table, param, source, log) for param, source in table.inputs.items()
    }


__all__ = ["INPUT_READERS", "read_inputs", "reader_for"]
