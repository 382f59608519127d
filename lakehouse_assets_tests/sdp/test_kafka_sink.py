"""An SDP pipeline's Kafka sink (``dp.create_sink(name, "kafka", {...})`` and an append flow into
it), with a real broker: each row the flow returns is one Kafka record (its ``key`` and
``value``), every landed order reaches the topic once across two rounds, and a flow edited to
return no ``value`` (picked up by the same process) stops with one sentence before anything is
sent."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient, NewTopic

from devstack.kafka_broker import KafkaBroker
from lakehouse_assets.lib import LakehousePaths, load_spark_pipeline

pytestmark = pytest.mark.slow
TOPIC = "orders_out"
PIPELINE = """from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table
def orders():
    return spark.readStream.format("json").schema("order_id STRING, amount DOUBLE").load(spark.conf.get("shop.landing"))


dp.create_sink("orders_out", "kafka", {{"kafka.bootstrap.servers": "{bootstrap}", "topic": "{topic}"}})


@dp.append_flow(target="orders_out")
def send_orders():
    return spark.readStream.table("orders").select({columns})
"""
RECORD = 'F.col("order_id").alias("key"), F.to_json(F.struct("order_id", "amount")).alias("value")'


def land(landing: Path, name: str, orders: list[tuple[str, float]]) -> None:
    landing.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({"order_id": o, "amount": a}) + "\n" for o, a in orders)
    (landing / f"_{name}").write_text(lines)
    (landing / f"_{name}").rename(landing / name)


def sent(broker: KafkaBroker) -> Counter:
    consumer = KafkaConsumer(
        TOPIC, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000
    )
    records = Counter(
        (m.key.decode(), json.loads(m.value)["order_id"], json.loads(m.value)["amount"]) for m in consumer
    )
    consumer.close()
    return records


def materialize(spec: Path, root: Path, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    defs = load_spark_pipeline(spec, paths=LakehousePaths(str(root)))
    return dg.materialize(list(defs.assets or []), resources=defs.resources, instance=instance, raise_on_error=False)


@pytest.mark.gate  # CI's representative of this file (docs/testing.md)
def test_a_kafka_sink_sends_each_row_as_a_record(tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    root, landing, project = tmp_path / "root", tmp_path / "elsewhere" / "orders", tmp_path / "shop"
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))
    (project / "transformations").mkdir(parents=True)
    spec = project / "spark-pipeline.yml"
    spec.write_text(
        f"name: shop\nstorage: s\nconfiguration:\n  shop.landing: {landing}\nlibraries:\n  - glob:\n      include: transformations/**\n"
    )
    code = project / "transformations" / "shop.py"
    instance = dg.DagsterInstance.ephemeral()
    rounds = [[("o1", 10.0), ("o2", 5.5)], [("o3", 7.25), ("o4", 1.0), ("o5", 2.0)]]
    with KafkaBroker(tmp_path / "kafka") as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic(TOPIC, 2, 1)])
        admin.close()
        code.write_text(PIPELINE.format(bootstrap=broker.bootstrap, topic=TOPIC, columns=RECORD))
        for i, orders in enumerate(rounds, start=1):
            land(landing, f"{i}.json", orders)
            assert materialize(spec, root, instance).success
            expected = Counter((o, o, a) for r in rounds[:i] for o, a in r)
            assert sent(broker) == expected  # every order once: no run was interrupted

        code.write_text(PIPELINE.format(bootstrap=broker.bootstrap, topic=TOPIC, columns='"order_id", "amount"'))
        land(landing, "3.json", [("o6", 3.0)])
        result = materialize(spec, root, instance)
        failure = next(e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE)
        message = failure.step_failure_data.error.message
        assert "orders_out: a Kafka sink sends each row as a Kafka record: return a `value` column" in message
        assert sent(broker) == expected  # nothing more was sent
