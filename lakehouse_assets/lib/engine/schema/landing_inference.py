"""Reading landed files to infer their schema (JSON, Parquet's merged footers, the union of Avro
writer schemas): each path read as a name, lines within the input's bound, a file that cannot be
read set aside (and the others read again), a file that would make the schema too wide set
aside."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DoubleType, LongType, StructField, StructType

from lakehouse_assets.lib.declare.parsing import CORRUPT_RECORD
from lakehouse_assets.lib.declare.sql_names import column
from lakehouse_assets.lib.engine.errors import engine_lost, unreadable_file
from lakehouse_assets.lib.engine.intake.bounds import LINE_MAX_OPTION, Limits, hadoop_line_bound
from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger
from lakehouse_assets.lib.engine.intake.width import beyond_width, leaf_count, set_aside_files
from lakehouse_assets.lib.engine.reading.landing_names import NO_GLOB
from lakehouse_assets.lib.engine.state.delta_sql import sql_type
from lakehouse_assets.lib.errors import LakehouseError, LandedFileUnreadable, first_line
from lakehouse_assets.lib.settings import current

Log = Callable[[str], None]
SetAsideTo = tuple[IntakeLedger, Limits, Log]


def _read(spark: SparkSession, files: list[str], file_format: str, max_line_bytes: int) -> DataFrame:
    reader = spark.read.option(NO_GLOB, "false")
    if file_format == "parquet":
        return reader.option("mergeSchema", "true").parquet(*files)
    if file_format == "avro":
        return reader.format("avro").schema(_merged_avro_schema(spark, files)).load(files)
    bound = str(hadoop_line_bound(max_line_bytes))
    return reader.option("mode", "PERMISSIVE").option(LINE_MAX_OPTION, bound).json(files)


def read_files(
    spark: SparkSession, files: list[str], file_format: str, landed: str, set_aside_to: SetAsideTo
) -> tuple[DataFrame | None, list[str]]:
    """The files (paths in the landing folder ``landed``) read for their schema, and the files
    read: one that cannot be read (a truncated archive, a broken footer) is set aside and the
    others are read again (None when none is left)."""
    ledger, limits, log = set_aside_to
    while files:
        try:
            return _read(spark, files, file_format, limits.max_line_bytes), files
        except Exception as error:
            if engine_lost(error, current().spark_remote):
                raise
            failed = error.file if isinstance(error, LandedFileUnreadable) else unreadable_file(error)
            name = (failed or "").rstrip("/").rsplit("/", 1)[-1]
            if not failed or name not in {f.rsplit("/", 1)[-1] for f in files}:
                raise
            reason = f"reading it for its schema failed ({first_line(error)[:300]})"
            set_aside_files(landed, ledger, {name: reason}, log)
            files = [f for f in files if f.rsplit("/", 1)[-1] != name]
    return None, []


def _merged_avro_schema(spark: SparkSession, files: list[str]) -> StructType:
    """The union of the files' writer schemas, in order of first appearance: Spark reads a set
    of Avro files with one file's schema (it has no ``mergeSchema``), so each file is asked. A
    field typed differently in two files takes the wider numeric type Spark's reader widens to,
    else the run stops naming both files."""
    merged: dict[str, tuple[StructField, str]] = {}  # lower-case name -> (field, first file)
    for file in files:
        try:
            fields = spark.read.option(NO_GLOB, "false").format("avro").load(file).schema.fields
        except Exception as error:
            if engine_lost(error, current().spark_remote):
                raise
            raise LandedFileUnreadable(
                f"{file} is not a readable Avro file ({first_line(error)[:300]})", file
            ) from None
        for found in fields:
            known = merged.get(found.name.lower())
            if known is None:
                merged[found.name.lower()] = (StructField(found.name, found.dataType, True), file)
            elif known[0].dataType != found.dataType:
                wider = _WIDER.get(frozenset((known[0].dataType.simpleString(), found.dataType.simpleString())))
                if wider is None:
                    raise LakehouseError(
                        f"{file} has field {found.name} {found.dataType.simpleString()} where {known[1]} has "
                        f"{known[0].dataType.simpleString()}: the Avro files of one input must agree on its type"
                    )
                merged[found.name.lower()] = (StructField(known[0].name, wider, True), known[1])
    return StructType([field for field, _ in merged.values()])


# Type pairs Spark's Avro reader widens (an int field read as long or double, a float as double).
_WIDER: dict[frozenset[str], DataType] = {
    frozenset(("int", "bigint")): LongType(),
    frozenset(("int", "double")): DoubleType(),
    frozenset(("float", "double")): DoubleType(),
}


def infer_columns(frame: DataFrame) -> dict[str, str]:
    """The columns Spark found in the files of ``frame`` (JSON inference, Parquet's merged
    footers, the union of Avro writer schemas): name -> type, in order."""
    return {f.name: sql_type(f.dataType) for f in frame.schema.fields if f.name != CORRUPT_RECORD}


def first_files(frame: DataFrame | None, files: list[str], columns: list[str]) -> dict[str, str]:
    """For each of ``columns``, the first of ``files`` (``frame`` reads them) holding a value of it."""
    if frame is None or not columns:
        return {}
    path = F.col("_metadata.file_path")
    found = frame.select(
        *[F.min(F.when(column(c).isNotNull(), path)).alias(f"c{i}") for i, c in enumerate(columns)]
    ).first()
    return {c: str((found[f"c{i}"] if found else None) or files[0]).rsplit("/", 1)[-1] for i, c in enumerate(columns)}


def within_width(
    spark: SparkSession,
    landed: str,
    file_format: str,
    files: list[str],
    known: dict[str, str] | None,
    together: StructType,
    set_aside_to: SetAsideTo,
) -> list[str]:
    """``files`` but those that would take the schema past the column bound (set aside), given
    ``together``, the schema inferred over them all: each file is inferred alone only when
    together they are too wide."""
    ledger, limits, log = set_aside_to
    columns = {c.lower(): 1 for c in known or {}} | {f.name.lower(): leaf_count(f.dataType) for f in together.fields}
    if sum(columns.values()) <= limits.max_columns:
        return files

    def columns_of(name: str) -> dict[str, int]:
        schema = _read(spark, [f"{landed}/{name}"], file_format, limits.max_line_bytes).schema
        return {f.name: leaf_count(f.dataType) for f in schema.fields if f.name != CORRUPT_RECORD}

    wide = beyond_width(files, columns_of, list(known or {}), limits.max_columns)
    set_aside_files(landed, ledger, wide, log)
    return [n for n in files if n not in wide]
