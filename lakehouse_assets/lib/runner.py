"""Running one streaming table: checkpoint, ``availableNow`` query, sink, progress, report."""

from __future__ import annotations

import json
import os
import re
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

from delta.tables import DeltaTable
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType, StructField, StructType

from lakehouse_assets.lib import storage
from lakehouse_assets.lib.expectations import (
    FAILED_EXPECTATIONS,
    ExpectationFailed,
    expectation_counts,
    first_failure,
    split_by_expectations,
    with_expectation_flags,
)
from lakehouse_assets.lib.settings import LakehousePaths
from lakehouse_assets.lib.sinks import BatchWrite, RecomputeSink, append_batch
from lakehouse_assets.lib.table import LandingInput, StreamingTable, TableInput

CDF_COLUMNS = ["_change_type", "_commit_version", "_commit_timestamp"]
Log = Callable[[str], None]


class LakehouseError(Exception):
    """A failure with a message meant for the user (table name, cause, fix)."""


def fault_point(table: str, point: str) -> None:
    """Test-only: ``LAKEHOUSE_FAULT=<table>:<point>`` kills this process at that instant, so
    crash tests can hit the dangerous moments exactly (after a Delta commit and before the
    checkpoint records it; between the two writes of one micro-batch)."""
    if os.environ.get("LAKEHOUSE_FAULT") == f"{table}:{point}":
        os.killpg(os.getpgid(0), signal.SIGKILL)  # the Spark JVM dies with us, as in a real crash


@dataclass(frozen=True)
class WrittenSample:
    """The schema and a few rows (as text) of what a run last wrote to one table: its metadata's
    preview without reading the table back."""

    schema: StructType
    rows: list[dict[str, str | None]]


def sample_written(df: DataFrame, rows: int = 5) -> WrittenSample:
    """A few rows of ``df`` (a cached micro-batch: no new scan), as text so values Python cannot
    hold (timestamps before year 1 after a time-zone shift) still show."""
    as_text = df.select(*[F.col(f"`{c}`").cast("string").alias(c) for c in df.columns])
    return WrittenSample(df.schema, [r.asDict() for r in as_text.limit(rows).collect()])


@dataclass(frozen=True)
class ExpectationSplit:
    """A micro-batch split by its expectations, with the row counts of each part."""

    kept: DataFrame
    quarantined: DataFrame
    rows: int
    quarantined_rows: int
    kept_rows: int


@dataclass
class RunReport:
    """What one materialization of a streaming table did."""

    table: str
    batches: int = 0
    rows_read: int = 0
    rows_written: int = 0
    rows_quarantined: int = 0
    rows_dropped: int = 0
    late_rows_dropped: int = 0
    state_rows: int = 0
    expectation_failures: dict[str, int] = field(default_factory=dict)
    expectation_rows: int = 0
    duration_s: float = 0.0
    batch_durations_ms: list[int] = field(default_factory=list)
    # Per output table: a sample of the last micro-batch written to it (append and merge sinks).
    written: dict[str, WrittenSample] = field(default_factory=dict)


def _nullable(schema: StructType) -> StructType:
    return StructType([StructField(f.name, f.dataType, True, f.metadata) for f in schema.fields])


def idle_stream_input(offsets: list[str], committed: bool, latest_version: int | None, table_id: str | None) -> bool:
    """Whether a checkpointed query over one Delta table (stream or change feed) has nothing to
    read: its last batch committed, its offset points past the table's latest version
    (``reservoirVersion`` V with ``index`` -1 means "next read starts at version V"), and the
    table is the one the checkpoint read. Anything unexpected answers False: run the query."""
    if not committed or latest_version is None or table_id is None or len(offsets) != 3:
        return False
    try:
        offset = json.loads(offsets[2])
    except ValueError:
        return False
    return (
        isinstance(offset, dict)
        and offset.get("reservoirId") == table_id
        and offset.get("index") == -1
        and offset.get("isStartingVersion") is False
        and isinstance(offset.get("reservoirVersion"), int)
        and latest_version < offset["reservoirVersion"]
    )


def _short_error(error: BaseException) -> str:
    """The useful part of a streaming failure: our own message, else Spark's first lines."""
    text = str(error)
    if any(m in text for m in ("STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE", "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
                               "STREAMING_STATEFUL_OPERATOR_NOT_MATCH", "StateSchemaNotCompatible",
                               "STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION", "state schema")):  # fmt: skip
        return (
            "its stateful query no longer matches the state in its checkpoint (keys, aggregates or "
            "operators changed); run a full refresh of this table (run config "
            "full_refresh: true) to rebuild it from its inputs"
        )
    for marker in ("ExpectationFailed: ", "LakehouseError: "):
        if marker in text:
            return text.split(marker, 1)[1].splitlines()[0]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    causes = [ln.removeprefix("Caused by: ") for ln in lines if ln.startswith("Caused by:")]
    unreadable = re.search(r"Encountered error while reading file (\S+?)\.?(\s|$)", text)
    if unreadable:
        cause = causes[-1] if causes else "unreadable"
        return (
            f"cannot read landed file {unreadable.group(1)} ({cause[:300]}); remove it or land a "
            "fixed copy under a new name, then run again"
        )
    if "Traceback (most recent call last)" in text:
        # A Python error inside a micro-batch: its last exception line says what went wrong.
        raised = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Failed)\b", ln)]
        raised = [ln for ln in raised if not ln.startswith("py4j.protocol.Py4JJavaError")]
        if raised:
            return raised[-1][:1500]
    head = lines[0] if lines else type(error).__name__
    head = re.sub(r"^\[?[A-Z_]+\]?\s*Query \S+ \[id = [^\]]+, runId = [^\]]+\] terminated with exception:\s*", "", head)
    message = head if not causes else f"{head} ({causes[-1]})"
    return message[:1500]


class TableRunner:
    """Runs declared streaming tables on one SparkSession under one data root."""

    def __init__(self, spark: SparkSession, paths: LakehousePaths, log: Log | None = None):
        self.spark = spark
        self.paths = paths
        self.log: Log = log or (lambda message: None)

    # -- inputs -----------------------------------------------------------------------------

    def _read_landing(self, source: LandingInput, table: StreamingTable) -> DataFrame:
        path = self.paths.landing(source.source)
        if not storage.exists(self.spark, path):
            self.spark._jvm.org.apache.hadoop.fs.FileSystem.get(  # noqa: SLF001
                self.spark._jvm.java.net.URI(path), self.spark._jsc.hadoopConfiguration()  # noqa: SLF001
            ).mkdirs(self.spark._jvm.org.apache.hadoop.fs.Path(path))  # noqa: SLF001
        self._reject_outside_links(path)
        # A landed file removed after a failed batch planned it (say a corrupt gzip the user
        # deleted) must not wedge the retry; complete files are immutable otherwise.
        reader = (
            self.spark.readStream.format(source.format)
            .option("pathGlobFilter", source.glob)
            .option("ignoreMissingFiles", "true")
            # Spark skips files whose mtime is older than the newest seen minus maxFileAge
            # (7 days by default): a file renamed into place with an old mtime would be lost.
            .option("maxFileAge", "100000d")
        )
        if source.schema:
            reader = reader.schema(source.schema)
        df = reader.options(**source.options).load(path)
        return df.select(
            "*",
            F.col("_metadata.file_path").alias("_source_file"),
            F.current_timestamp().alias("_ingested_at"),
        )

    def _reject_outside_links(self, landing_path: str) -> None:
        """Nothing outside the data root is read: a symbolic link in the landing zone that
        points outside it is renamed to an ignored ``_rejected-`` name, and logged."""
        if not self.paths.is_local:
            return
        root = self.paths.local_path(self.paths.root).resolve()
        folder = self.paths.local_path(landing_path)
        if not folder.exists():
            return
        links = [Path(d) / n for d, dirs, files in os.walk(folder) for n in dirs + files]
        for entry in links:
            if entry.is_symlink() and not entry.name.startswith(("_", ".")):
                target = entry.resolve()
                if root not in target.parents and target != root:
                    entry.rename(entry.with_name(f"_rejected-{entry.name}"))
                    self.log(f"rejected {entry}: a symbolic link to {target}, outside the data root")

    def _require_table(self, name: str, reader: str) -> str:
        path = self.paths.table(name)
        if not DeltaTable.isDeltaTable(self.spark, path):
            raise LakehouseError(
                f"{reader} reads {name}, which does not exist yet at {path}: "
                f"materialize {name} first (for example --select '+{reader}')."
            )
        return path

    def _read_table(self, source: TableInput, table: StreamingTable) -> DataFrame:
        if source.mode == "static":
            path = self.paths.table(source.table)
            if source.schema_if_missing and not DeltaTable.isDeltaTable(self.spark, path):
                return self.spark.createDataFrame([], source.schema_if_missing)
            return self.spark.read.format("delta").load(self._require_table(source.table, table.name))
        path = self._require_table(source.table, table.name)
        reader = self.spark.readStream.format("delta").options(**source.options)
        if source.mode == "change_feed":
            reader = reader.option("readChangeFeed", "true")
        df = reader.load(path)
        if source.watermark:
            df = df.withWatermark(*source.watermark)
        return df

    def read_inputs(self, table: StreamingTable) -> dict[str, DataFrame]:
        return {
            param: self._read_landing(i, table) if isinstance(i, LandingInput) else self._read_table(i, table)
            for param, i in table.inputs.items()
        }

    # -- tables and checkpoints -------------------------------------------------------------

    def _app_id(self, table: StreamingTable) -> str:
        """Identity of the table's checkpoint: new after a full refresh, stable across restarts,
        so Delta's txnVersion dedup never skips a batch of a rebuilt table."""
        path = f"{self.paths.checkpoint(table.name)}/app_id"
        app_id = storage.read_text(self.spark, path)
        if not app_id:
            app_id = f"{table.name}-{uuid.uuid4()}"
            storage.write_text(self.spark, path, app_id)
        return app_id.strip()

    def ensure_table(self, name: str, schema: StructType, table: StreamingTable, main: bool) -> None:
        path = self.paths.table(name)
        if DeltaTable.isDeltaTable(self.spark, path):
            return
        builder = DeltaTable.createIfNotExists(self.spark).location(path).addColumns(_nullable(schema))
        if main and table.partition_by:
            builder = builder.partitionedBy(*table.partition_by)
        properties = {"delta.enableChangeDataFeed": "true"}
        properties.update(table.table_properties if main else {})
        for key, value in properties.items():
            builder = builder.property(key, value)
        builder.execute()

    def full_refresh(self, table: StreamingTable) -> None:
        """Forget the checkpoint and empty the outputs; keeping the tables' identity lets
        downstream change-feed readers see the rebuild as deletes and inserts."""
        self.log(f"{table.name}: full refresh: resetting checkpoint and emptying {table.outputs}")
        storage.delete(self.spark, self.paths.checkpoint(table.name))
        for name in table.outputs:
            path = self.paths.table(name)
            if DeltaTable.isDeltaTable(self.spark, path):
                DeltaTable.forPath(self.spark, path).delete()

    # -- the run ----------------------------------------------------------------------------

    def run(self, table: StreamingTable, full_refresh: bool = False) -> RunReport:
        lock = self.paths.lock_file(table.name)

        def waiting(seconds: float | None = None) -> None:
            if seconds is None:
                self.log(f"{table.name}: another run is writing this table; waiting for it")
            else:
                self.log(f"{table.name}: waited {seconds:.1f}s for the other writer")

        with storage.exclusive_lock(lock, waiting):
            if full_refresh:
                self.full_refresh(table)
            return self._run(table)

    def _guard_checkpoint(self, table: StreamingTable) -> None:
        """Refuse to restart from nothing into a table that already holds rows: without its
        checkpoint the query would re-read every input and duplicate data."""
        if storage.exists(self.spark, f"{self.paths.checkpoint(table.name)}/query/metadata"):
            return
        for name in table.outputs:
            path = self.paths.table(name)
            if DeltaTable.isDeltaTable(self.spark, path) and not self.spark.read.format("delta").load(path).isEmpty():
                raise LakehouseError(
                    f"{table.name}: its checkpoint is missing ({self.paths.checkpoint(table.name)}) but "
                    f"{name} already holds rows, so a restart would duplicate data. Run a full refresh "
                    f"(run config ops: {{{table.name}: {{config: {{full_refresh: true}}}}}}) to rebuild it."
                )

    def _idle_input(self, table: StreamingTable) -> str | None:
        """The input of a table whose query would find nothing new, else None. Only for tables
        that read exactly one Delta table as a stream or change feed (plus any static inputs),
        keep no state, and whose outputs exist; everything else always runs its query."""
        if os.environ.get("LAKEHOUSE_SKIP_IDLE_QUERIES", "1") == "0" or table.is_stateful:
            return None
        if any(isinstance(i, LandingInput) for i in table.inputs.values()):
            return None
        streams = [i for i in table.inputs.values() if isinstance(i, TableInput) and i.mode != "static"]
        if len(streams) != 1:
            return None
        query = f"{self.paths.checkpoint(table.name)}/query"
        batches = storage.list_names(self.spark, f"{query}/offsets")
        ids = [int(n) for n in batches if n.isdigit()]
        if not ids:
            return None
        last = max(ids)
        committed = storage.exists(self.spark, f"{query}/commits/{last}")
        source = self.paths.table(streams[0].table)
        latest = storage.delta_version(self.spark, source)
        if not committed or latest is None:
            return None
        # From the logs, not through Delta: in a cold JVM Delta's first use of a table costs seconds.
        if any(storage.delta_version(self.spark, self.paths.table(name)) is None for name in table.outputs):
            return None
        table_id = storage.delta_table_id(self.spark, source) or (
            DeltaTable.forPath(self.spark, source).detail().select("id").first()[0]
        )
        offsets = (storage.read_text(self.spark, f"{query}/offsets/{last}") or "").strip().splitlines()
        return streams[0].table if idle_stream_input(offsets, committed, latest, table_id) else None

    def _run(self, table: StreamingTable) -> RunReport:
        self._guard_checkpoint(table)
        started = time.monotonic()
        report = RunReport(table.name)
        idle = self._idle_input(table)
        if idle:
            # Starting the query would only read the checkpoint and find no new version.
            self.log(f"{table.name}: nothing new in {idle} since the last run; query not started")
            report.duration_s = round(time.monotonic() - started, 3)
            return report
        inputs = self.read_inputs(table)
        sink = table.sink
        if isinstance(sink, RecomputeSink):
            (param, stream_df), = inputs.items()
            source = table.inputs[param]
            stream_df = stream_df.drop(*[c for c in CDF_COLUMNS if c in stream_df.columns])
            empty = self.spark.createDataFrame([], stream_df.schema)
            output_schema = sink.output(table.transform(empty)).schema
            if table.quarantine:
                transformed = table.transform(empty)
                q_schema = transformed.select(*self._quarantine_columns(table, transformed)).schema
                if table.quarantine.with_failures:
                    q_schema = q_schema.add(FAILED_EXPECTATIONS, ArrayType(StringType()))
                self.ensure_table(table.quarantine.table, q_schema, table, main=False)
            handler = self._recompute_handler(table, sink, param, source, report)
        else:
            stream_df = table.transform(**inputs)
            columns = table.columns or [c for c in stream_df.columns if not c.startswith("__lh_")]
            publish = table.publish or (lambda df: df.select(*columns))
            output_schema = publish(stream_df).schema
            if table.quarantine:
                q_schema = stream_df.select(*self._quarantine_columns(table, stream_df)).schema
                if table.quarantine.with_failures:
                    q_schema = q_schema.add(FAILED_EXPECTATIONS, ArrayType(StringType()))
                self.ensure_table(table.quarantine.table, q_schema, table, main=False)
            handler = self._batch_handler(table, publish, report)
        self.ensure_table(table.name, output_schema, table, main=True)

        query = (
            stream_df.writeStream.queryName(table.name)
            .foreachBatch(handler)
            .outputMode(table.output_mode)
            .trigger(availableNow=True)
            .option("checkpointLocation", f"{self.paths.checkpoint(table.name)}/query")
            .start()
        )
        self._await(query, table, report)
        report.duration_s = round(time.monotonic() - started, 3)
        return report

    def _await(self, query: Any, table: StreamingTable, report: RunReport) -> None:
        seen = -1

        def log_progress() -> None:
            nonlocal seen
            for progress in query.recentProgress:
                batch_id = progress.batchId
                if batch_id <= seen:
                    continue
                seen = batch_id
                rows = progress.numInputRows
                if rows == 0 and batch_id > 0 and not progress.stateOperators:
                    continue
                duration = int(progress.durationMs.get("triggerExecution", 0))
                report.batch_durations_ms.append(duration)
                for op in progress.stateOperators or []:
                    report.late_rows_dropped += int(op.numRowsDroppedByWatermark or 0)
                    report.state_rows = int(op.numRowsTotal or 0)
                self.log(
                    f"{table.name}: batch {batch_id}: {rows} rows in {duration} ms "
                    f"({progress.processedRowsPerSecond or 0:.0f} rows/s)"
                )

        try:
            while not query.awaitTermination(1):
                log_progress()
        except StreamingQueryException as error:
            raise LakehouseError(f"{table.name}: {_short_error(error)}") from None
        finally:
            log_progress()

    # -- micro-batch handlers ---------------------------------------------------------------

    def _write(self, spark: SparkSession, name: str, app_id: str, batch_id: int) -> BatchWrite:
        return BatchWrite(spark, self.paths.table(name), app_id, batch_id)

    @staticmethod
    def _quarantine_columns(table: StreamingTable, df: DataFrame) -> list[str]:
        q = table.quarantine
        assert q is not None
        return q.columns or table.columns or [c for c in df.columns if not c.startswith("__lh_")]

    def _batch_handler(
        self, table: StreamingTable, publish: Callable[[DataFrame], DataFrame], report: RunReport
    ) -> Callable:
        app_id = self._app_id(table)
        expectations = table.expectations

        def handle(batch: DataFrame, batch_id: int) -> None:
            spark = batch.sparkSession
            flagged = with_expectation_flags(batch, expectations).persist()
            try:
                split = self._evaluate_expectations(table, flagged, report)
                if split.rows == 0:
                    return
                published = publish(split.kept)
                # The default publish only selects columns, so the kept rows are the rows to write.
                known = split.kept_rows if table.publish is None else None
                written = table.sink.write(published, self._write(spark, table.name, app_id, batch_id), known)
                fault_point(table.name, "after_table_write")
                if written:
                    report.written[table.name] = sample_written(published)
                n_quarantined = self._write_quarantine(table, split, batch, app_id, batch_id, report)
                fault_point(table.name, "after_batch_writes")
                report.batches += 1
                report.rows_read += split.rows
                report.rows_written += written
                report.rows_quarantined += n_quarantined
            finally:
                flagged.unpersist()

        return handle

    def _recompute_handler(
        self, table: StreamingTable, sink: RecomputeSink, param: str, source: Any, report: RunReport
    ) -> Callable:
        app_id = self._app_id(table)
        input_path = self.paths.table(source.table)

        expectations = table.expectations

        def passing(df: DataFrame) -> DataFrame:
            """The transform's rows that pass every drop/quarantine expectation."""
            kept, _, _ = split_by_expectations(with_expectation_flags(df, expectations), expectations)
            return kept

        def transform(df: DataFrame) -> DataFrame:
            rows = table.transform(**{param: df})
            return passing(rows) if expectations else rows

        def keep_sample(rows: DataFrame) -> None:
            sample = sample_written(rows)
            if sample.rows:  # (no rows recomputed: the metadata reads the table for its preview)
                report.written[table.name] = sample

        def handle(batch: DataFrame, batch_id: int) -> None:
            spark = batch.sparkSession
            changes = batch.drop(*[c for c in CDF_COLUMNS if c in batch.columns]).persist()
            try:
                rows = changes.count()
                if rows == 0:
                    return
                if expectations:
                    self._check_recompute_expectations(table, changes, param, app_id, batch_id, report)
                written = sink.write_recomputed(
                    changes,
                    lambda: spark.read.format("delta").load(input_path),
                    transform,
                    self._write(spark, table.name, app_id, batch_id),
                    on_written=keep_sample,
                )
                fault_point(table.name, "after_table_write")
                report.batches += 1
                report.rows_read += rows
                report.rows_written += written
            finally:
                changes.unpersist()

        return handle

    def _check_recompute_expectations(
        self, table: StreamingTable, changes: DataFrame, param: str, app_id: str, batch_id: int, report: RunReport
    ) -> None:
        """Expectations of a recompute table, on the transform of the micro-batch's new input
        rows: count failures, fail the query, and append quarantined rows (idempotently)."""
        flagged = with_expectation_flags(table.transform(**{param: changes}), table.expectations).persist()
        try:
            split = self._evaluate_expectations(table, flagged, report)
            report.rows_quarantined += self._write_quarantine(table, split, flagged, app_id, batch_id, report)
        finally:
            flagged.unpersist()

    @staticmethod
    def _evaluate_expectations(
        table: StreamingTable, flagged: DataFrame, report: RunReport
    ) -> ExpectationSplit:
        """Count each expectation's failures into the report, fail the query on a violated
        ``fail`` expectation, and split the rows (one pass over ``flagged``: the counts)."""
        expectations = table.expectations
        counts = expectation_counts(flagged, expectations)
        rows, n_quarantined, n_dropped = counts.pop("__rows"), counts.pop("__quarantined"), counts.pop("__dropped")
        for e in expectations:
            if e.action == "fail" and counts[e.name]:
                raise ExpectationFailed(
                    f"{table.name}: expectation {e.name} ({e.condition}) failed on "
                    f"{counts[e.name]} rows, e.g. {first_failure(flagged, e)}"
                )
        kept, quarantined, _ = split_by_expectations(flagged, expectations)
        report.rows_dropped += n_dropped
        report.expectation_rows += rows
        for name, failed in counts.items():
            report.expectation_failures[name] = report.expectation_failures.get(name, 0) + failed
        return ExpectationSplit(kept, quarantined, rows, n_quarantined, rows - n_quarantined - n_dropped)

    def _write_quarantine(
        self,
        table: StreamingTable,
        split: ExpectationSplit,
        source: DataFrame,
        app_id: str,
        batch_id: int,
        report: RunReport,
    ) -> int:
        """Append the quarantined rows, idempotently; returns how many there were."""
        q = table.quarantine
        if q is None:
            return 0
        q_columns = self._quarantine_columns(table, source)
        q_rows = split.quarantined.select(*q_columns, *([FAILED_EXPECTATIONS] if q.with_failures else []))
        n_quarantined = split.quarantined_rows
        if n_quarantined:
            append_batch(q_rows, self._write(source.sparkSession, q.table, f"{app_id}:quarantine", batch_id))
            report.written[q.table] = sample_written(q_rows)
        return n_quarantined
