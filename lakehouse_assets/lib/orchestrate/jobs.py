"""Asset jobs derived from the declared tables: one ingest job per landing source, one for all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import dagster as dg

from lakehouse_assets.lib.declare.inputs import LandingInput, TableInput
from lakehouse_assets.lib.declare.table import StreamingTable

if TYPE_CHECKING:  # the job type is not exported by name from dagster
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

SOURCE_TAG = "lakehouse/landing_source"
TRIGGER_TAG = "lakehouse/trigger"


def landing_sources(tables: Sequence[StreamingTable]) -> dict[str, list[StreamingTable]]:
    """Each landing source and the tables that read it, in declaration order."""
    sources: dict[str, list[StreamingTable]] = {}
    for table in tables:
        for source in table.landing_sources:
            sources.setdefault(source, []).append(table)
    return sources


def landing_globs(tables: Sequence[StreamingTable], source: str) -> list[str]:
    """The file name patterns the tables reading ``source`` actually read."""
    return sorted(
        {i.glob for t in tables for i in t.inputs.values() if isinstance(i, LandingInput) and i.source == source}
    )


def fed_by(tables: Sequence[StreamingTable], source: str) -> list[StreamingTable]:
    """The tables reading landing ``source`` and every table that streams from one of them.

    A static (lookup) input is not followed: a new lookup row changes nothing already written,
    so the events chain does not wait for, or fail with, the customers feed it enriches from."""
    chosen = {key for t in tables if source in t.landing_sources for key in t.outputs}
    grew = True
    while grew:
        grew = False
        for table in tables:
            if table.name not in chosen and any(
                isinstance(i, TableInput) and i.table in chosen for i in table.streaming_inputs.values()
            ):
                chosen.update(table.outputs)
                grew = True
    return [t for t in tables if t.name in chosen]


def source_selection(tables: Sequence[StreamingTable], source: str) -> dg.AssetSelection:
    """The tables fed by ``source`` (:func:`fed_by`), with their quarantine tables and checks."""
    return dg.AssetSelection.assets(*[key for t in fed_by(tables, source) for key in t.outputs])


def ingest_job_name(source: str) -> str:
    return f"ingest_{source}"


def build_ingest_jobs(tables: Sequence[StreamingTable]) -> dict[str, "UnresolvedAssetJobDefinition"]:
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


def build_refresh_job() -> "UnresolvedAssetJobDefinition":
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
