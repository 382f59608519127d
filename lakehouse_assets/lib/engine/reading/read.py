"""Reading a table's inputs: landing folders, Kafka topics and upstream Delta tables, as declared."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.inputs import (
    SELF_DESCRIBING_FORMATS,
    CatalogInput,
    LandingInput,
    TableInput,
)
from lakehouse_assets.lib.declare.parsing import csv_positions, parse_csv_rows, parse_landed_json
from lakehouse_assets.lib.engine.intake.admission import limits_for
from lakehouse_assets.lib.engine.intake.bounds import LINE_FORMATS, LINE_MAX_OPTION, hadoop_line_bound
from lakehouse_assets.lib.engine.reading.landing_names import as_landed, landing_folder
from lakehouse_assets.lib.engine.schema.csv_layout import (
    CsvPlan,
    has_header,
    reader_options,
    value_formats,
)
from lakehouse_assets.lib.engine.state import delta_sql, storage
from lakehouse_assets.lib.engine.state.catalog import register_table
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current

Log = Callable[[str], None]


def read_landing(
    spark: SparkSession,
    paths: LakehousePaths,
    source: LandingInput,
    log: Log,
    schema: dict[str, str] | None = None,
    csv_plan: CsvPlan | None = None,
) -> DataFrame:
    """The landed files as a stream: lines, CSV rows, or (``json``, ``csv`` with ``csv_plan``,
    ``parquet``, ``avro``) rows of ``schema``."""
    path = landing_folder(paths, source)
    storage.make_dirs(path)
    # A planned file set aside after its batch failed reading it must not wedge the replay (the
    # intake names any other planned file that went missing); complete files are immutable.
    reader = (
        spark.readStream.format("text" if source.format == "json" else source.format)
        .option("pathGlobFilter", source.glob)
        .option("ignoreMissingFiles", "true")
        # Spark skips files whose mtime is older than the newest seen minus maxFileAge
        # (7 days by default): a file renamed into place with an old mtime would be lost.
        .option("maxFileAge", "100000d")
    )
    if source.format in LINE_FORMATS:
        # The intake sets aside a file with a longer line before the query; this bound holds for
        # one that landed after the intake's listing too: the reader never holds such a line.
        reader = reader.option(LINE_MAX_OPTION, str(hadoop_line_bound(limits_for(source).max_line_bytes)))
    if source.schema and not source.infers_schema:
        reader = reader.schema(source.schema)
    if source.format in SELF_DESCRIBING_FORMATS:  # by name: a file lacking a column reads null
        reader = reader.schema(", ".join(f"{delta_sql.quote(c)} {t}" for c, t in (schema or {}).items()))
    options = source.options
    if csv_plan is not None:  # every value as text, by position; named by its file's header below
        reader = reader.schema(", ".join(f"{c} string" for c in csv_positions(csv_plan.width)))
        options = reader_options(options)
        options["header"] = str(has_header(source.options)).lower()
    df = reader.options(**options).load(path)
    df = df.select(
        "*",
        as_landed(F.col("_metadata.file_path")).alias("_source_file"),
        F.current_timestamp().alias("_ingested_at"),
        *([as_landed(F.col("_metadata.file_name")).alias("_lh_file")] if csv_plan else []),
    )
    if source.format == "json":
        return parse_landed_json(df, schema or {}, rescue_undeclared=source.evolution != "none")
    if csv_plan is not None:
        return parse_csv_rows(
            df,
            schema or {},
            csv_plan.headers,
            csv_plan.expected_files,
            rescue_undeclared=source.evolution != "none",
            formats=value_formats(source.options),
        )
    return df


def require_table(spark: SparkSession, paths: LakehousePaths, name: str, reader: str) -> str:
    path = paths.table(name)
    if not delta_sql.is_delta_table(path):
        raise LakehouseError(
            f"{reader} reads {name}, which does not exist yet at {path}: "
            f"materialize {name} first (for example --select '+{reader}')."
        )
    return path


def read_table(spark: SparkSession, paths: LakehousePaths, source: TableInput, reader_name: str) -> DataFrame:
    if source.mode == "static":
        path = paths.table(source.table)
        if source.schema_if_missing and not delta_sql.is_delta_table(path):
            return spark.createDataFrame([], source.schema_if_missing)
        return spark.read.format("delta").load(require_table(spark, paths, source.table, reader_name))
    path = require_table(spark, paths, source.table, reader_name)
    reader = spark.readStream.format("delta").options(**source.options)
    if source.mode == "change_feed":
        reader = reader.option("readChangeFeed", "true")
    df = reader.load(path)
    if source.watermark:
        df = df.withWatermark(source.watermark.column, source.watermark.lateness or current().allowed_lateness)
    return df


def read_catalog_table(spark: SparkSession, paths: LakehousePaths, source: CatalogInput, reader: str) -> DataFrame:
    """The catalog table ``source.table`` as a snapshot; a Delta table of that name under the data
    root (another pipeline's) is registered first."""
    name = source.table
    if not spark.catalog.tableExists(name) and delta_sql.is_delta_table(paths.table(name)):
        register_table(spark, name, paths.table(name))
    if not spark.catalog.tableExists(name):
        raise LakehouseError(
            f"{reader} reads {name}, which is neither a table of this pipeline nor in Spark's catalog: "
            f"register it on the engine (CREATE TABLE {name} USING delta LOCATION '...') or read it by path."
        )
    return spark.read.table(name)
