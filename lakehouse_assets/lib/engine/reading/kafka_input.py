"""A flow's Kafka inputs: the stream Spark reads, and the checks before it starts (brokers
answer, topics exist, nothing was removed by retention before the checkpoint read it) that
turn a hang or a stack trace into one sentence, and skip a query with nothing to read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import cast

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakehouse_assets.lib.brokers.kafka_offsets import (
    KafkaProblem,
    TopicMissing,
    check_reachable,
    client_options,
    committed_offsets,
    pending,
    removed_before_read,
    topic_offsets,
)
from lakehouse_assets.lib.declare.inputs import KafkaInput
from lakehouse_assets.lib.declare.sinks import KafkaSink
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.engine.state.checkpoint import query_checkpoint
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current


class FlowSkipped(LakehouseError):
    """A further flow (``append_flow``) cannot run yet and is passed over; the table's other
    flows run. The message says why."""


def kafka_servers(source: KafkaInput | KafkaSink) -> str:
    """The input's or sink's brokers: its own, else ``LAKEHOUSE_KAFKA_BOOTSTRAP``; empty when neither."""
    return source.bootstrap_servers or current().kafka_bootstrap


def with_sink_brokers(table: TableSpec) -> TableSpec:
    """The table with its Kafka sink's brokers resolved here, where the run's settings are (the
    micro-batches may run in another process), after checking that one answers.

    :raises LakehouseError: no broker answers.
    """
    sink = cast(KafkaSink, table.sink)  # the Kafka kind's strategy (writing/sink_kinds.py)
    servers = kafka_servers(sink)
    try:
        check_reachable(servers, client_options(sink.options))
    except KafkaProblem as problem:
        raise LakehouseError(f"{table.name}: {problem}") from None
    return replace(table, sink=replace(sink, bootstrap_servers=servers))


def check_kafka_records(table: TableSpec, schema: StructType) -> None:
    """A sink that sends rows as they are needs Kafka records: a ``value`` column at least.

    :raises LakehouseError: the rows have no ``value``.
    """
    sink = cast(KafkaSink, table.sink)
    if sink.key is None and "value" not in schema.fieldNames():
        raise LakehouseError(
            f"{table.name}: a Kafka sink sends each row as a Kafka record: return a `value` column (string or "
            f"binary) and, if wanted, `key`; the rows have {', '.join(schema.fieldNames())}"
        )


def read_kafka(spark: SparkSession, source: KafkaInput, table: TableSpec) -> DataFrame:
    """The topic's messages as rows shaped like landed lines (see :func:`~lakehouse_assets.lib.declare.kafka_inputs.kafka`)."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", require_servers(source, table))
        .option("startingOffsets", source.starting_offsets)
        .option("failOnDataLoss", "true")
    )
    reader = (
        reader.option("subscribe", ",".join(source.topics))
        if source.topics
        else reader.option("subscribePattern", source.pattern)
    )
    df = reader.options(**source.options).load()
    return df.select(
        F.col("value").cast("string").alias("value"),
        F.concat(F.lit("kafka://"), "topic", F.lit("/"), "partition", F.lit("/"), "offset").alias("_source_file"),
        F.current_timestamp().alias("_ingested_at"),
        F.col("key").cast("string").alias("_kafka_key"),
        F.col("topic").alias("_kafka_topic"),
        F.col("partition").alias("_kafka_partition"),
        F.col("offset").alias("_kafka_offset"),
        F.col("timestamp").alias("_kafka_timestamp"),
    )


def require_servers(source: KafkaInput, table: TableSpec) -> str:
    servers = kafka_servers(source)
    if not servers:
        raise LakehouseError(
            f"{table.name} reads Kafka ({source.described}) but no broker is configured: set "
            "LAKEHOUSE_KAFKA_BOOTSTRAP (for example 127.0.0.1:9092, see make kafka)"
        )
    return servers


def committed_position(paths: LakehousePaths, table: TableSpec) -> dict[tuple[str, int], int] | None:
    """The offsets the flow's checkpoint has committed (the next ones to read); None before its
    first committed batch."""
    query = query_checkpoint(paths, table)
    done = [int(n) for n in storage.list_names(f"{query}/commits") if n.isdigit()]
    if not done:
        return None
    text = storage.read_text(f"{query}/offsets/{max(done)}") or ""
    return committed_offsets(text.strip().splitlines())


def check_kafka_inputs(paths: LakehousePaths, table: TableSpec, log: Callable[[str], None]) -> str | None:
    """Check the flow's Kafka inputs before its query starts; the topics when none has anything
    new for a flow that reads only Kafka (the query would find nothing), else None.

    :raises LakehouseError: brokers unreachable, a topic missing, or messages removed before
        they were read (unless the input sets ``failOnDataLoss`` to false).
    :raises FlowSkipped: a further flow's topic does not exist yet (its table's own flow, files
        say, must not wait for a topic nobody has produced to).
    """
    sources = table.kafka_inputs
    if not sources:
        return None
    committed = committed_position(paths, table)
    waiting = 0
    for source in sources:
        try:
            offsets = topic_offsets(source, require_servers(source, table))
        except TopicMissing as problem:
            if table.flow is None:
                raise LakehouseError(f"{table.name}: {problem}") from None
            raise FlowSkipped(f"{table.name} (flow {table.flow}): skipped: {problem}") from None
        except KafkaProblem as problem:
            raise LakehouseError(f"{table.name}: {problem}") from None
        if offsets is None:
            return None  # options only Spark's client understands: Spark checks and reads
        lost = removed_before_read(committed or {}, offsets)
        if lost and source.options.get("failOnDataLoss", "true").lower() != "false":
            raise LakehouseError(
                f"{table.name}: Kafka no longer holds messages this table has not read ({'; '.join(lost)}): "
                "retention removed them. Run a full refresh of the table (run config full_refresh: true) to "
                "re-read what the topics still hold, or set the input's option failOnDataLoss to 'false' to "
                "go on from the oldest message left"
            )
        if lost:
            log(f"{table.name}: messages removed by retention before they were read are skipped: {'; '.join(lost)}")
        waiting += pending(committed or {}, offsets, source.starting_offsets)
    only_kafka = len(sources) == len(table.streaming_inputs)
    if committed is not None and waiting == 0 and only_kafka and current().skip_idle_queries:
        return f"Kafka topic {', '.join(s.described for s in sources)}"
    return None
