"""What the engine does for each kind of sink: one registered strategy per
:attr:`~lakehouse_assets.lib.declare.sinks.TableSink.kind`, like the check evaluators of
:mod:`~lakehouse_assets.lib.engine.checks.check_rules`. A run asks the strategy of its table's sink
and never tells sinks apart by their type; a new kind of sink is a new entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol, cast

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from lakehouse_assets.lib.declare.sinks import KafkaSink, MergeSink, TableSink
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.reading.kafka_input import check_kafka_records, kafka_servers, with_sink_brokers
from lakehouse_assets.lib.engine.state.ledger import BatchLedger
from lakehouse_assets.lib.engine.writing.batch import PreparedQuery, prepare_batches
from lakehouse_assets.lib.engine.writing.direct import Direct
from lakehouse_assets.lib.engine.writing.overwrite import WholeWrite, replace_whole
from lakehouse_assets.lib.engine.writing.recompute import prepare_recompute
from lakehouse_assets.lib.engine.writing.snapshot_cdc import write_snapshot
from lakehouse_assets.lib.engine.writing.writes import BatchWrite, append_batch, merge_batch, publish_batch
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths


class Prepare(Protocol):
    """Builds a streaming sink's query: the stream and its micro-batch handler."""

    def __call__(
        self,
        spark: SparkSession,
        paths: LakehousePaths,
        table: TableSpec,
        inputs: dict[str, DataFrame],
        ledger: BatchLedger,
        app_id: str,
    ) -> PreparedQuery: ...


def _no_brokers(sink: TableSink) -> str | None:
    return None


def _rows_as_they_are(table: TableSpec, schema: StructType) -> None:
    return None


@dataclass(frozen=True)
class SinkKind:
    """The engine's strategy for one kind of sink.

    :param prepare: builds the ``availableNow`` query and its micro-batch handler (a streaming
        sink); None for a sink written whole.
    :param write_whole: writes the function's whole result on each run (no query, no checkpoint).
    :param direct: whether its rows may go through Delta's own streaming sink (:data:`Direct`).
    :param refresh: what the run report calls its refresh, when not the default.
    :param unconfigured: what it sends to that has no broker configured (its flow is skipped).
    :param resolve: the table as its query needs it, resolved where the run's settings are.
    :param check_rows: refuses, before the query starts, rows the sink cannot take.
    """

    prepare: Prepare | None = None
    write_whole: WholeWrite | None = None
    direct: Direct = "never"
    refresh: str | None = None
    unconfigured: Callable[[TableSink], str | None] = _no_brokers
    resolve: Callable[[TableSpec], TableSpec] | None = None
    check_rows: Callable[[TableSpec, StructType], None] = _rows_as_they_are


def _append_rows(sink: TableSink, batch: DataFrame, write: BatchWrite, rows: int | None) -> int:
    append_batch(batch, write)
    return batch.count() if rows is None else rows


def _merge_rows(sink: TableSink, batch: DataFrame, write: BatchWrite, rows: int | None) -> int:
    return merge_batch(cast(MergeSink, sink), batch, write)


def _publish_rows(sink: TableSink, batch: DataFrame, write: BatchWrite, rows: int | None) -> int:
    publish_batch(cast(KafkaSink, sink), batch)
    return batch.count() if rows is None else rows


def _kafka_unconfigured(sink: TableSink) -> str | None:
    kafka = cast(KafkaSink, sink)
    return None if kafka_servers(kafka) else f"publishes to {kafka.topic}"


SINK_KINDS: dict[str, SinkKind] = {
    "append": SinkKind(prepare=partial(prepare_batches, write_rows=_append_rows), direct="plain"),
    "merge": SinkKind(prepare=partial(prepare_batches, write_rows=_merge_rows)),
    "kafka": SinkKind(
        prepare=partial(prepare_batches, write_rows=_publish_rows),
        unconfigured=_kafka_unconfigured,
        resolve=with_sink_brokers,
        check_rows=check_kafka_records,
    ),
    "recompute": SinkKind(prepare=prepare_recompute, refresh="incremental"),
    "delta_path": SinkKind(direct="always"),
    "overwrite": SinkKind(write_whole=replace_whole),
    "snapshot_cdc": SinkKind(write_whole=write_snapshot),
}


def sink_kind(sink: TableSink) -> SinkKind:
    """The strategy registered for ``sink``'s kind.

    :raises LakehouseError: no strategy is registered for it.
    """
    try:
        return SINK_KINDS[sink.kind]
    except KeyError:
        raise LakehouseError(
            f"the engine has no strategy for sinks of kind {sink.kind!r} ({type(sink).__name__}); "
            f"known kinds: {', '.join(sorted(SINK_KINDS))}"
        ) from None
