"""One sensor per Kafka subscription: messages past what the reading tables' checkpoints have
committed -> one run of the subscription's ingest job.

A tick asks the broker for the topics' end offsets (kafka-python, no Spark) and compares them
with the offsets in each reading flow's last committed batch (``offsets/<N>`` with
``commits/<N>`` in its checkpoint). It skips, saying why, when no broker is configured, when
nothing is new, or while a run of the job is queued or going (that run, or the next, drains
everything: ``availableNow``). The run key names the end offsets, so a retried tick never
launches the same messages twice; when the last run ended badly, the messages it left are asked
for again once per failed run, with the landing sensors' back-off (:mod:`.stranded`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import dagster as dg

from lakehouse_assets.lib.brokers.kafka_offsets import pending, topic_offsets
from lakehouse_assets.lib.declare.inputs import KafkaInput
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.reading.kafka_input import committed_position, kafka_servers
from lakehouse_assets.lib.errors import KafkaProblem
from lakehouse_assets.lib.orchestrate.decide import SensorSettings
from lakehouse_assets.lib.orchestrate.jobs import KAFKA_TAG, kafka_job_name
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
from lakehouse_assets.lib.orchestrate.sensors import in_flight_run
from lakehouse_assets.lib.orchestrate.stranded import past_reading, retry_run_request, stranded
from lakehouse_assets.lib.settings import current

if TYPE_CHECKING:  # the job type is not exported by name from dagster
    from lakehouse_assets.lib.orchestrate.dagster_internals import UnresolvedAssetJobDefinition


def kafka_sensor_name(subscription: str) -> str:
    return kafka_job_name(subscription).replace("ingest_", "", 1) + "_sensor"


def _reading_flows(readers: Sequence[TableSpec], subscription: str) -> list[tuple[TableSpec, KafkaInput]]:
    return [
        (flow, source)
        for table in readers
        for flow in table.flow_runs()
        for source in flow.kafka_inputs
        if source.described == subscription
    ]


def build_kafka_sensor(
    subscription: str, readers: Sequence[TableSpec], job: UnresolvedAssetJobDefinition
) -> dg.SensorDefinition:
    flows = _reading_flows(readers, subscription)
    reader_names = [t.name for t in readers]

    @dg.sensor(
        name=kafka_sensor_name(subscription),
        job=job,
        minimum_interval_seconds=current().sensor_interval_s,
        # Running by default where a broker is configured when the code location loads.
        default_status=dg.DefaultSensorStatus.RUNNING if current().kafka_bootstrap else dg.DefaultSensorStatus.STOPPED,
        description=(
            f"Watches Kafka {subscription} (LAKEHOUSE_KAFKA_BOOTSTRAP) and runs {job.name} when its end "
            f"offsets move past what {', '.join(t.name for t in readers)} committed. Waits while a run is queued or has yet to read it."
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext, lakehouse: LakehouseResource):
        waiting, ends = 0, []
        for flow, source in flows:
            servers = kafka_servers(source)
            if not servers:
                return dg.SkipReason(
                    f"No Kafka broker configured (LAKEHOUSE_KAFKA_BOOTSTRAP is empty); {subscription} is not read."
                )
            try:
                offsets = topic_offsets(source, servers, timeout_s=5)
            except KafkaProblem as problem:
                return dg.SkipReason(f"{problem}.")
            if offsets is None:
                return dg.SkipReason(
                    f"{subscription}: its consumer options need Java's client; schedule {job.name} instead."
                )
            waiting += pending(committed_position(lakehouse.paths, flow) or {}, offsets, source.starting_offsets)
            ends.append(sorted(offsets.end.items()))
        if waiting == 0:
            return dg.SkipReason(
                f"No new messages in Kafka {subscription}: every reading table has committed its end offsets."
            )
        tags = {KAFKA_TAG: subscription}
        run = in_flight_run(context.instance, tags)
        # A run past its reading cannot take the new messages: the next run starts now (table pools).
        if run is not None and not past_reading(context.instance, run, reader_names):
            return dg.SkipReason(
                f"{waiting} new message(s) waiting: run {run.run_id[:8]} of {run.job_name} is "
                f"{run.status.value}; it or the next run drains them."
            )
        # The last run ended badly: its messages are still pending, and a request keyed by the same
        # end offsets would be taken for the one already made. One retry per failed run, backing off.
        failed = stranded(context.instance, tags) if run is None else None
        if failed is not None:
            left = failed.wait_left(time.time(), SensorSettings.from_env().retry)
            if left > 0:
                return dg.SkipReason(
                    f"{waiting} new message(s) waiting: run {failed.run_id[:8]} of {failed.job_name} ended "
                    f"{failed.status} ({failed.failures} in a row); asking for another run {left:.0f}s from now."
                )
            context.log.info(f"{subscription}: the last run ended badly; requesting {job.name} again")
            return retry_run_request(failed, {**tags, "lakehouse/new_messages": str(waiting)})
        key = hashlib.sha256(repr(ends).encode()).hexdigest()[:16]
        context.log.info(f"{subscription}: requesting {job.name} for {waiting} new message(s)")
        return dg.RunRequest(
            run_key=f"kafka:{subscription}:{key}",
            tags={**tags, "lakehouse/new_messages": str(waiting)},
        )

    return _sensor
