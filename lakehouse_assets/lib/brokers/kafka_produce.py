"""Producing text lines to a Kafka topic (the generator's ``--to-kafka``, tests, benchmarks)."""

from __future__ import annotations

from kafka import KafkaProducer

from lakehouse_assets.lib.errors import KafkaProblem


def produce_lines(servers: str, topic: str, lines: list[str | None], partitions: int | None = None) -> list[str]:
    """Send each line as one message (None: a tombstone, keyed ``tombstone``), waiting until the broker
    has them all; the ``kafka://<topic>/<partition>/<offset>`` of each, in order.

    :param servers: the brokers.
    :param topic: the topic (created with the broker's defaults when it does not exist).
    :param partitions: spread the lines round-robin over this many partitions (default: the
        producer's partitioner).
    :raises KafkaProblem: no broker answers.
    """
    try:
        producer = KafkaProducer(bootstrap_servers=servers.split(","), bootstrap_timeout_ms=10_000, linger_ms=5)
    except Exception as error:  # noqa: BLE001 - kafka-python raises several kinds here
        raise KafkaProblem(f"no Kafka broker answers at {servers}: {error}") from None
    try:
        futures = [
            producer.send(
                topic,
                None if line is None else line.encode("utf-8"),
                key=b"tombstone" if line is None else None,
                partition=None if partitions is None else i % partitions,
            )
            for i, line in enumerate(lines)
        ]
        producer.flush()
        sent = [f.get(timeout=30) for f in futures]
    finally:
        producer.close()
    return [f"kafka://{m.topic}/{m.partition}/{m.offset}" for m in sent]
