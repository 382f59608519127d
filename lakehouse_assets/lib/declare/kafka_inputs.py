"""Kafka topics as a streaming table's input: read from the table's checkpoint like landing
files, each run reading what arrived since the last one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from lakehouse_assets.lib.errors import DeclarationError


@dataclass(frozen=True)
class KafkaInput:
    """Messages of Kafka topics, read from the table's checkpoint like landing files: each run
    reads what arrived since the last one (``availableNow``)."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    starting_offsets: str = "earliest"
    bootstrap_servers: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    kind: ClassVar[str] = "kafka"
    streaming: ClassVar[bool] = True
    upstream_table: ClassVar[str | None] = None
    watermark: ClassVar[None] = None

    @property
    def described(self) -> str:
        return ", ".join(self.topics) if self.topics else f"topics matching {self.pattern}"


def kafka(
    topic: str | None = None,
    *,
    topics: list[str] | None = None,
    pattern: str | None = None,
    starting_offsets: str = "earliest",
    bootstrap_servers: str | None = None,
    options: dict[str, str] | None = None,
) -> KafkaInput:
    """Read the messages of a Kafka topic as rows shaped like landed lines: ``value`` (the
    message as UTF-8 text), ``_source_file`` (``kafka://<topic>/<partition>/<offset>``),
    ``_ingested_at``, plus ``_kafka_key``, ``_kafka_topic``, ``_kafka_partition``,
    ``_kafka_offset`` and ``_kafka_timestamp``. A function written for a landing input reads it
    unchanged.

    :param topic: the topic (or give ``topics`` or ``pattern``).
    :param topics: several topics.
    :param pattern: a Java regular expression of topic names (``subscribePattern``).
    :param starting_offsets: where a new checkpoint starts: ``earliest`` (default), ``latest``
        or Spark's per-partition JSON.
    :param bootstrap_servers: the brokers (default: ``LAKEHOUSE_KAFKA_BOOTSTRAP``, read at run
        time).
    :param options: Spark Kafka source options; ``kafka.``-prefixed ones go to the consumer
        (``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``...).
    """
    chosen = ([topic] if topic else []) + list(topics or [])
    if bool(chosen) == bool(pattern):
        raise DeclarationError("kafka(): give a topic (or topics=[...]) or a pattern, not both and not neither")
    return KafkaInput(tuple(chosen), pattern, starting_offsets, bootstrap_servers, dict(options or {}))
