"""Kafka in and out with a real broker (KRaft, one node, from Maven Central): topic ``events``
(3 partitions) and landed files flow into ``bronze_events`` as two flows, through
``dagster asset materialize``; the tables equal answers computed here from the produced messages
and the files, across rounds, random kills and a kill while publishing; the sink's topic holds
every change of ``gold_hourly_revenue`` at least once, with its commit version."""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from devstack.kafka_broker import KafkaBroker
from devstack.ports import free_port
from lakehouse_assets.definitions import TABLES, build_definitions
from lakehouse_assets.generate import Generator, GeneratorOptions, generate
from lakehouse_assets.lib import append_flow, kafka, landing, streaming_table
from lakehouse_assets.lib.brokers.kafka_produce import produce_lines
from lakehouse_assets.lib.engine.run import run_table
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.orchestrate.jobs import KAFKA_TAG, kafka_subscriptions
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
from lakehouse_assets.lib.orchestrate.stranded import RETRY_OF_TAG
from lakehouse_assets.lib.paths import LakehousePaths
from verification.crash import materialize_in_child
from verification.expected import ExpectedEvents
from verification.runs import assert_events_exact

pytestmark = pytest.mark.slow
START = datetime(2026, 3, 1, 9, tzinfo=UTC)
# The events chain and the sink (not the other gold tables: they add time, not coverage).
SELECTION = "bronze_events,bronze_events_quarantine,silver_events,silver_events_quarantine,gold_hourly_revenue,gold_hourly_revenue_changes"
Messages = list[tuple[str | None, str]]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    with KafkaBroker(tmp_path_factory.mktemp("kafka")) as running:
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap)
        admin.create_topics([NewTopic("events", 3, 1)])
        admin.close()
        yield running


def produce_round(broker: KafkaBroker, seed: int) -> Messages:
    """Generated events with bad values and re-deliveries, a tombstone and a blank value."""
    lines: list[str | None] = list(
        Generator(GeneratorOptions(seed=seed, start=START, bad_lines=0.05, duplicate=0.08)).event_lines(150)
    )
    lines += [None, "   ", lines[0], lines[3]]
    return list(zip(lines, produce_lines(broker.bootstrap, "events", lines, partitions=3), strict=True))


def land_round(root: Path, seed: int) -> None:
    generate(LakehousePaths(str(root)), GeneratorOptions(seed=seed, start=START, files=2, rows=80), ["events"])


def run(tmp_path: Path, broker: KafkaBroker, **kwargs):
    return materialize_in_child(tmp_path, SELECTION, env={"LAKEHOUSE_KAFKA_BOOTSTRAP": broker.bootstrap}, **kwargs)


def assert_kafka_rows_exact(spark: SparkSession, root: Path, messages: Messages) -> None:
    """Each message's row is in bronze_events or its quarantine once, named by its offset."""
    expected = ExpectedEvents(root, messages)
    paths = LakehousePaths(str(root))
    from_kafka = F.col("_source_file").startswith("kafka://")
    bronze = spark.read.format("delta").load(paths.table("bronze_events")).where(from_kafka)
    got = Counter((r._source_file, r.event_id) for r in bronze.collect())
    assert got == Counter((r["_file"], r.get("event_id")) for r in expected.bronze if r["_file"].startswith("kafka://"))
    quarantine = spark.read.format("delta").load(paths.table("bronze_events_quarantine")).where(from_kafka)
    assert Counter((r._source_file, r.raw_line) for r in quarantine.collect()) == Counter(
        (uri, line) for line, uri in expected.bad_lines if uri.startswith("kafka://")
    )


def published(broker: KafkaBroker) -> list[dict]:
    consumer = KafkaConsumer(
        "gold_hourly_revenue_changes", bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
    )  # fmt: skip
    values = [json.loads(m.value) for m in consumer]
    consumer.close()
    return values


def change_id(change: dict) -> tuple:
    start = datetime.fromisoformat(change["window_start"].replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)
    return start, change["category"], change["commit_version"], change["change_type"]


def expected_changes(spark: SparkSession, root: Path) -> Counter:
    """Every change of gold_hourly_revenue from its change data feed (pre-images left out)."""
    feed = (
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
        .load(LakehousePaths(str(root)).table("gold_hourly_revenue")).where("_change_type <> 'update_preimage'")
    )  # fmt: skip
    kind = {"insert": "insert", "update_postimage": "update", "delete": "delete"}
    return Counter((r.window_start, r.category, r._commit_version, kind[r._change_type]) for r in feed.collect())


def assert_sink_has_every_change(spark: SparkSession, root: Path, broker: KafkaBroker) -> Counter:
    """Every change at least once; the newest message per key is the table's row. Returns the
    messages per change."""
    messages = published(broker)
    sent = Counter(change_id(m) for m in messages)
    assert set(sent) == set(expected_changes(spark, root))
    newest: dict[tuple, dict] = {}
    for m in sorted(messages, key=lambda m: m["commit_version"]):
        newest[change_id(m)[:2]] = m
    gold = spark.read.format("delta").load(LakehousePaths(str(root)).table("gold_hourly_revenue")).collect()
    assert {(r.window_start, r.category): (round(r.revenue, 6), r.orders, r.buyers) for r in gold} == {
        key: (round(m["revenue"], 6), m["orders"], m["buyers"])
        for key, m in newest.items()
        if m["change_type"] != "delete"
    }
    return sent


def sensor_result(root: Path, broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LAKEHOUSE_KAFKA_BOOTSTRAP", broker.bootstrap)
    sensor = next(s for s in build_definitions().sensors if s.name == "kafka_events_sensor")
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"lakehouse": LakehouseResource(root=str(root))})
        return sensor.evaluate_tick(context)


def test_kafka_and_files_flow_into_bronze_and_out_to_the_sink_exactly(
    tmp_path: Path, spark: SparkSession, broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "lakehouse"
    messages = produce_round(broker, seed=1)
    land_round(root, seed=2)
    assert sensor_result(root, broker, monkeypatch).run_requests, "the sensor sees the new messages"
    first = run(tmp_path, broker)
    assert first.returncode == 0, first.output
    assert_kafka_rows_exact(spark, root, messages)
    assert_events_exact(spark, root, messages)
    once = assert_sink_has_every_change(spark, root, broker)
    assert set(once.values()) == {1}, "no run was killed: every change is published once"
    idle = sensor_result(root, broker, monkeypatch)
    assert not idle.run_requests and "No new messages" in idle.skip_message

    # Round 2: more of both, the run SIGKILLed at a random instant, then retried.
    messages += produce_round(broker, seed=3)
    land_round(root, seed=4)
    killed = run(tmp_path, broker, kill_after=random.uniform(5, 30))
    retried = run(tmp_path, broker)
    assert retried.returncode == 0, retried.output
    assert_kafka_rows_exact(spark, root, messages)
    assert_events_exact(spark, root, messages)
    assert_sink_has_every_change(spark, root, broker)
    print(f"round 2: killed={killed.killed} after {killed.seconds:.1f}s")

    # Round 3: killed right after the sink sent a micro-batch, before its checkpoint recorded it.
    before = Counter(change_id(m) for m in published(broker))
    messages += produce_round(broker, seed=5)
    in_flight = run(tmp_path, broker, fault="gold_hourly_revenue_changes:after_table_write")
    assert in_flight.killed, in_flight.output
    assert run(tmp_path, broker).returncode == 0
    assert_events_exact(spark, root, messages)
    sent = assert_sink_has_every_change(spark, root, broker)
    new = {change: n for change, n in sent.items() if change not in before}
    assert new and set(new.values()) == {2}, "the batch in flight is re-sent once, whole; nothing else is repeated"
    assert all(sent[change] == n for change, n in before.items())


def test_a_failed_kafka_run_is_asked_for_again_without_new_messages(
    tmp_path: Path, broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The messages a failed run left are still pending, under the same end offsets: the sensor
    asks for one more run per failed run (after the back-off), not only when more arrive. While
    that run is going it asks for nothing, until the run is past reading the topic (runs overlap
    by table)."""
    root = tmp_path / "lakehouse"
    produce_round(broker, seed=11)
    monkeypatch.setenv("LAKEHOUSE_KAFKA_BOOTSTRAP", broker.bootstrap)
    sensor = next(s for s in build_definitions().sensors if s.name == "kafka_events_sensor")
    with dg.instance_for_test() as instance:

        def tick():
            resources = {"lakehouse": LakehouseResource(root=str(root))}
            return sensor.evaluate_tick(dg.build_sensor_context(instance=instance, resources=resources))

        (request,) = tick().run_requests
        failed = str(uuid.uuid4())
        instance.add_run(
            dg.DagsterRun(
                job_name="ingest_kafka_events", run_id=failed, status=dg.DagsterRunStatus.FAILURE, tags=request.tags
            )
        )
        waiting = tick()
        assert not waiting.run_requests and "ended FAILURE (1 in a row)" in waiting.skip_message
        monkeypatch.setenv("LAKEHOUSE_SENSOR_RETRY_BACKOFF_SECONDS", "0.001")
        (retry,) = tick().run_requests
        assert retry.run_key == f"retry-of-{failed}" and retry.run_key != request.run_key
        assert retry.tags[RETRY_OF_TAG] == failed and retry.tags[KAFKA_TAG] == request.tags[KAFKA_TAG]
        # The retry going (and yet to read the topic): nothing more is asked for.
        going_id = str(uuid.uuid4())
        instance.add_run(
            dg.DagsterRun(
                job_name="ingest_kafka_events", run_id=going_id, status=dg.DagsterRunStatus.STARTED, tags=retry.tags
            )
        )
        going = tick()
        assert not going.run_requests and "is STARTED" in going.skip_message
        # Once it has materialized every table reading the topic, what is sent now is the next
        # run's: it is asked for while the going run finishes its other tables (each table's pool
        # keeps one writer), keyed by the new end offsets.
        readers = kafka_subscriptions(TABLES)[request.tags[KAFKA_TAG]]
        assert readers
        for table in readers:
            materialized_by(instance, going_id, table.name)
        produce_round(broker, seed=12)
        (overlap,) = tick().run_requests
        assert overlap.run_key not in (request.run_key, retry.run_key)
        assert overlap.tags[KAFKA_TAG] == request.tags[KAFKA_TAG] and RETRY_OF_TAG not in overlap.tags


def materialized_by(instance: dg.DagsterInstance, run_id: str, table: str) -> None:
    """Record ``table``'s materialization by run ``run_id``, as its step does."""
    from dagster._core.events import DagsterEvent, DagsterEventType, StepMaterializationData

    event = DagsterEvent(
        DagsterEventType.ASSET_MATERIALIZATION.value,
        "ingest_kafka_events",
        event_specific_data=StepMaterializationData(dg.AssetMaterialization(table)),
    )
    instance.report_dagster_event(event, run_id=run_id)


@streaming_table(group="test", inputs={"lines": kafka("retained")})
def kafka_lines(lines: DataFrame) -> DataFrame:
    return lines.select("value", "_source_file", "_kafka_partition", "_kafka_offset")


@streaming_table(
    group="test", inputs={"lines": landing("notes")}, flows=[append_flow("kafka", inputs={"lines": kafka("not_yet")})]
)
def notes(lines: DataFrame) -> DataFrame:
    return lines.select("value", "_source_file")


def values(spark: SparkSession, paths: LakehousePaths) -> list[str]:
    return sorted(r.value for r in spark.read.format("delta").load(paths.table("kafka_lines")).collect())


def test_unreachable_broker_and_missing_topic_fail_fast_with_one_sentence(
    tmp_path: Path, spark: SparkSession, broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = LakehousePaths(str(tmp_path))
    nobody = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("LAKEHOUSE_KAFKA_BOOTSTRAP", nobody)
    with pytest.raises(LakehouseError, match=f"kafka_lines: no Kafka broker answers at {nobody}"):
        run_table(spark, paths, kafka_lines)
    monkeypatch.setenv("LAKEHOUSE_KAFKA_BOOTSTRAP", broker.bootstrap)
    with pytest.raises(
        LakehouseError, match=f"kafka_lines: Kafka topic retained does not exist yet on {broker.bootstrap}"
    ):
        run_table(spark, paths, kafka_lines)
    # A further flow whose topic nobody has produced to yet does not hold up the table's files.
    (tmp_path / "landing" / "notes").mkdir(parents=True)
    (tmp_path / "landing" / "notes" / "a.txt").write_text("one\ntwo\n")
    report = run_table(spark, paths, notes)
    assert report.rows_written == 2
    assert any("notes (flow kafka): skipped: Kafka topic not_yet does not exist yet" in w for w in report.warnings), (
        report.warnings
    )
    monkeypatch.delenv("LAKEHOUSE_KAFKA_BOOTSTRAP")
    with pytest.raises(LakehouseError, match=r"kafka_lines reads Kafka .retained. but no broker is configured"):
        run_table(spark, paths, kafka_lines)


@pytest.mark.gate  # CI's representative of this file (docs/testing.md)
def test_messages_removed_by_retention_before_they_were_read_stop_the_run_until_a_full_refresh(
    tmp_path: Path, spark: SparkSession, broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKEHOUSE_KAFKA_BOOTSTRAP", broker.bootstrap)
    paths = LakehousePaths(str(tmp_path))
    produce_lines(broker.bootstrap, "retained", [f"m{i}" for i in range(5)], partitions=1)
    assert run_table(spark, paths, kafka_lines).rows_written == 5
    assert run_table(spark, paths, kafka_lines).rows_written == 0, "nothing new: the query is not started"
    produce_lines(broker.bootstrap, "retained", [f"m{i}" for i in range(5, 10)], partitions=1)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.delete_records({TopicPartition("retained", 0): 8})
    admin.close()
    with pytest.raises(
        LakehouseError,
        match=r"kafka_lines: Kafka no longer holds messages .*retained/0 holds offsets from 8, the checkpoint is at 5.*full refresh",
    ):
        run_table(spark, paths, kafka_lines)
    assert values(spark, paths) == [f"m{i}" for i in range(5)], "nothing written by the refused run"
    run_table(spark, paths, kafka_lines, full_refresh_first=True)
    assert values(spark, paths) == ["m8", "m9"]
