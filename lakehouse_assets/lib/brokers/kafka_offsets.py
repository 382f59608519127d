"""Where a Kafka flow stands, without Spark: the topic's offsets from the broker (kafka-python),
what the flow's checkpoint has committed, and what lies between.

Used before a flow's query starts (fail fast on an unreachable broker, a missing topic, or
offsets retention removed), to skip a query with nothing to read, and by the Kafka sensor.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakehouse_assets.lib.declare.inputs import KafkaInput
from lakehouse_assets.lib.errors import KafkaProblem

if TYPE_CHECKING:
    from kafka import KafkaConsumer

Partition = tuple[str, int]

# Connection options kafka-python understands as well as Java's client. Any other SASL or SSL
# option (a JAAS line, Java key stores) only Spark's consumer can use, so the checks that need a
# client step aside; other consumer options (isolation.level, ...) do not change who may connect.
_CLIENT_OPTIONS = {
    "kafka.security.protocol": "security_protocol",
    "kafka.sasl.mechanism": "sasl_mechanism",
    "kafka.ssl.cafile": "ssl_cafile",
}


class TopicMissing(KafkaProblem):
    """No subscribed topic exists yet (the brokers answer)."""


@dataclass(frozen=True)
class TopicOffsets:
    """Per partition of the subscribed topics: the first offset still held and the next one."""

    beginning: dict[Partition, int]
    end: dict[Partition, int]


def client_options(options: dict[str, str]) -> dict[str, str] | None:
    """kafka-python's options for Spark's Kafka ``options``; None when some option only the Java
    client understands."""
    if any(k.startswith(("kafka.sasl.", "kafka.ssl.")) and k not in _CLIENT_OPTIONS for k in options):
        return None
    return {_CLIENT_OPTIONS[k]: v for k, v in options.items() if k in _CLIENT_OPTIONS}


def _consumer(servers: str, timeout_s: float, options: dict[str, str]) -> KafkaConsumer:
    # kafka-python is imported when a broker is asked, not by every run's code location.
    from kafka import KafkaConsumer
    from kafka.errors import KafkaTimeoutError

    timeout_ms = int(timeout_s * 1000)
    try:
        return KafkaConsumer(
            bootstrap_servers=servers.split(","),
            request_timeout_ms=timeout_ms,
            bootstrap_timeout_ms=timeout_ms,
            enable_auto_commit=False,
            **options,
        )
    except KafkaTimeoutError:
        raise KafkaProblem(
            f"no Kafka broker answers at {servers} (within {timeout_s:g}s): start it or fix LAKEHOUSE_KAFKA_BOOTSTRAP"
        ) from None


def check_reachable(servers: str, options: dict[str, str] | None, timeout_s: float = 10.0) -> None:
    """Raise :class:`KafkaProblem` unless a broker answers at ``servers`` (None options: the
    check needs Java's client and is left to Spark)."""
    if options is not None:
        _consumer(servers, timeout_s, options).close()


def topic_offsets(source: KafkaInput, servers: str, timeout_s: float = 10.0) -> TopicOffsets | None:
    """The broker's offsets of every partition the input subscribes to; None when the input's
    security options are for Java's client only.

    :raises KafkaProblem: the brokers do not answer, or no subscribed topic exists yet.
    """
    from kafka import TopicPartition
    from kafka.errors import KafkaError

    options = client_options(source.options)
    if options is None:
        return None
    consumer = _consumer(servers, timeout_s, options)
    try:
        existing = consumer.topics()
        wanted = (
            [t for t in source.topics if t in existing]
            if source.topics
            else sorted(t for t in existing if re.fullmatch(source.pattern or "", t))
        )
        missing = [t for t in source.topics if t not in existing]
        if missing:
            raise TopicMissing(
                f"Kafka topic {', '.join(missing)} does not exist yet on {servers}: produce to it or create it first"
            )
        if not wanted:
            raise TopicMissing(f"no Kafka topic on {servers} matches the pattern {source.pattern!r} yet")
        partitions = [TopicPartition(t, p) for t in wanted for p in sorted(consumer.partitions_for_topic(t) or [])]
        beginning = consumer.beginning_offsets(partitions)
        end = consumer.end_offsets(partitions)
    except KafkaError as error:
        raise KafkaProblem(f"Kafka at {servers} did not answer for {source.described}: {error}") from None
    finally:
        consumer.close()
    return TopicOffsets(
        {(tp.topic, tp.partition): o for tp, o in beginning.items()},
        {(tp.topic, tp.partition): o for tp, o in end.items()},
    )


def committed_offsets(offset_lines: list[str]) -> dict[Partition, int]:
    """The next offsets to read, from the lines of a committed batch's file in the query's
    ``offsets/`` folder (``v1``, batch metadata, then one JSON line per source such as
    ``{"events":{"0":123}}``); empty when no line is a Kafka source's."""
    found: dict[Partition, int] = {}
    for line in offset_lines[2:]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        for topic, partitions in value.items():
            if isinstance(partitions, dict) and all(isinstance(v, int) for v in partitions.values()):
                found.update({(topic, int(p)): o for p, o in partitions.items()})
    return found


def pending(committed: dict[Partition, int], offsets: TopicOffsets, starting_offsets: str = "earliest") -> int:
    """Messages the flow has not read yet (a partition the checkpoint does not know starts at
    its beginning, or at its end for ``latest``)."""
    total = 0
    for partition, end in offsets.end.items():
        start = committed.get(partition)
        if start is None:
            start = end if starting_offsets == "latest" else offsets.beginning[partition]
        total += max(0, end - max(start, offsets.beginning[partition]))
    return total


def removed_before_read(committed: dict[Partition, int], offsets: TopicOffsets) -> list[str]:
    """Partitions where retention removed messages the checkpoint had not read yet, described."""
    return [
        f"{topic}/{partition} holds offsets from {offsets.beginning[(topic, partition)]}, the checkpoint is at {at}"
        for (topic, partition), at in sorted(committed.items())
        if (topic, partition) in offsets.beginning and at < offsets.beginning[(topic, partition)]
    ]
