"""Asset jobs derived from the declared tables: one ingest job per landing source and per Kafka
subscription, one for all."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import dagster as dg

from lakehouse_assets.lib.declare.inputs import LandingInput, of_kind
from lakehouse_assets.lib.declare.table import TableSpec

if TYPE_CHECKING:  # the job type is not exported by name from dagster
    from lakehouse_assets.lib.orchestrate.dagster_internals import UnresolvedAssetJobDefinition

SOURCE_TAG = "lakehouse/landing_source"
KAFKA_TAG = "lakehouse/kafka_subscription"
TRIGGER_TAG = "lakehouse/trigger"


def landing_sources(tables: Sequence[TableSpec]) -> dict[str, list[TableSpec]]:
    """Each landing source and the tables that read it, in declaration order."""
    sources: dict[str, list[TableSpec]] = {}
    for table in tables:
        for source in table.landing_sources:
            sources.setdefault(source, []).append(table)
    return sources


def landing_globs(tables: Sequence[TableSpec], source: str) -> list[str]:
    """The file name patterns the tables reading ``source`` actually read."""
    return sorted({i.glob for t in tables for i in of_kind(t.inputs.values(), LandingInput) if i.source == source})


def downstream_of(tables: Sequence[TableSpec], readers: Sequence[TableSpec]) -> list[TableSpec]:
    """``readers`` and every table that streams from one of them, transitively.

    A static (lookup) input is not followed: a new lookup row changes nothing already written,
    so the events chain does not wait for, or fail with, the customers feed it enriches from."""
    chosen = {key for t in readers for key in t.outputs}
    grew = True
    while grew:
        grew = False
        for table in tables:
            if table.name not in chosen and any(name in chosen for name in table.streamed_tables):
                chosen.update(table.outputs)
                grew = True
    return [t for t in tables if t.name in chosen]


def fed_by(tables: Sequence[TableSpec], source: str) -> list[TableSpec]:
    """The tables reading landing ``source`` and every table that streams from one of them."""
    return downstream_of(tables, [t for t in tables if source in t.landing_sources])


def asset_keys(tables: Sequence[TableSpec]) -> list[dg.AssetKey]:
    """The asset keys of the tables, each with its quarantine table."""
    return [dg.AssetKey(key) for t in tables for key in t.outputs]


def source_selection(tables: Sequence[TableSpec], source: str) -> dg.AssetSelection:
    """The tables fed by ``source`` (:func:`fed_by`), with their quarantine tables and checks."""
    return dg.AssetSelection.assets(*asset_keys(fed_by(tables, source)))


def ingest_job_name(source: str) -> str:
    return f"ingest_{source}"


def build_ingest_jobs(tables: Sequence[TableSpec]) -> dict[str, UnresolvedAssetJobDefinition]:
    return {
        source: dg.define_asset_job(
            name=ingest_job_name(source),
            selection=source_selection(tables, source),
            description=(
                f"Ingest new files from landing/{source}/ into "
                f"{', '.join(t.name for t in readers)} and refresh the tables that stream from them "
                "(not those that only look them up). Each table's query drains everything new "
                "(trigger availableNow)."
            ),
            tags={SOURCE_TAG: source},
        )
        for source, readers in landing_sources(tables).items()
    }


def kafka_subscriptions(tables: Sequence[TableSpec]) -> dict[str, list[TableSpec]]:
    """Each subscription (topics, or a pattern) and the tables that read it."""
    found: dict[str, list[TableSpec]] = {}
    for table in tables:
        for described in dict.fromkeys(i.described for i in table.kafka_inputs):
            found.setdefault(described, []).append(table)
    return found


def kafka_job_name(subscription: str) -> str:
    return "ingest_kafka_" + re.sub(r"[^A-Za-z0-9_]+", "_", subscription).strip("_")


def build_kafka_jobs(tables: Sequence[TableSpec]) -> dict[str, UnresolvedAssetJobDefinition]:
    return {
        subscription: dg.define_asset_job(
            name=kafka_job_name(subscription),
            selection=dg.AssetSelection.assets(*asset_keys(downstream_of(tables, readers))),
            description=(
                f"Ingest new messages of Kafka {subscription} into {', '.join(t.name for t in readers)} "
                "and refresh the tables that stream from them (trigger availableNow)."
            ),
            tags={KAFKA_TAG: subscription},
        )
        for subscription, readers in kafka_subscriptions(tables).items()
    }


def build_refresh_job() -> UnresolvedAssetJobDefinition:
    return dg.define_asset_job(
        name="refresh_all",
        selection=dg.AssetSelection.all(),
        description=(
            "Materialize every table incrementally (not a full refresh): a safety net that "
            "catches up anything a sensor did not trigger. Pass full_refresh: true in the "
            "launchpad's run config to rebuild a table from its inputs."
        ),
        tags={TRIGGER_TAG: "refresh"},
    )
