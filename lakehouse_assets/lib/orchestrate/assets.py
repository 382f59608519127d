"""Turning declared streaming tables into Dagster assets."""

import inspect
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from lakehouse_assets.lib import timings
from lakehouse_assets.lib.declare.checks import CheckOutcome, TableCheck
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.checks.check_rules import follows_last_evaluation
from lakehouse_assets.lib.engine.errors import engine_lost, engine_refused
from lakehouse_assets.lib.errors import EngineUnavailable, LakehouseError, RootUnusable
from lakehouse_assets.lib.orchestrate.execution import NOTHING_NEW, Materialized, TableRequest, table_events
from lakehouse_assets.lib.orchestrate.lookups import lookup_feeds, stale_lookups
from lakehouse_assets.lib.orchestrate.metadata import describe_columns
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource, StreamingTableConfig
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.deferred import SessionNotStarted, deferred_session
from lakehouse_assets.lib.spark.session import SparkResource


def _uri(table: TableSpec, paths: LakehousePaths) -> str:
    """Where the asset's rows are: its table under the root, or its sink's table or topic."""
    return table.sink.uri(paths.table(table.name))


def _code_reference(table: TableSpec) -> dg.CodeReferencesMetadataValue:
    # A function object, or a callable saying where it was declared (a pipeline's dataset).
    fn = inspect.unwrap(table.transform)
    file, line = getattr(fn, "defined_at", None) or (inspect.getsourcefile(fn) or "", inspect.getsourcelines(fn)[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # code references are beta in Dagster 1.13
        return dg.CodeReferencesMetadataValue(
            code_references=[
                dg.LocalFileCodeReference(
                    file_path=file,
                    line_number=line,
                    label=table.name,
                )
            ]
        )


def _specs(table: TableSpec, paths: LakehousePaths) -> list[dg.AssetSpec]:
    def spec(
        key: str, description: str | None, metadata: dict[str, Any], quarantine_of: str | None = None
    ) -> dg.AssetSpec:
        return dg.AssetSpec(
            key=key,
            description=description,
            metadata=metadata,
            group_name=table.group,
            # A quarantine table hangs off the table it serves in the lineage, marked as such.
            deps=[dg.AssetKey(quarantine_of)] if quarantine_of else [dg.AssetKey(t) for t in table.upstream_tables],
            kinds={"quarantine", "delta"} if quarantine_of else {"spark", table.sink.storage},
            owners=table.owners,
            tags=table.tags,
            freshness_policy=(dg.FreshnessPolicy.time_window(fail_window=table.freshness) if table.freshness else None),
        )

    specs = [
        spec(
            table.name,
            table.description,
            {
                "dagster/uri": _uri(table, paths),
                # Registered under this name in the catalog (engine.catalog): spark.table(name).
                **({"dagster/table_name": table.name} if table.writes_delta else {}),
                "dagster/code_references": _code_reference(table),
                "landing_sources": ", ".join(table.landing_sources) or "-",
            },
        )
    ]
    if table.quarantine:
        specs.append(
            spec(
                table.quarantine.table,
                f"Rows of {table.name} that failed its expectations, with the names they failed.",
                {
                    "dagster/uri": paths.table(table.quarantine.table),
                    "dagster/table_name": table.quarantine.table,
                    "quarantine_of": table.name,
                },
                quarantine_of=table.name,
            )
        )
    return specs


def _checked_asset(table: TableSpec, check: TableCheck) -> str:
    return table.quarantine.table if check.target == "quarantine" and table.quarantine else table.name


def _check_specs(table: TableSpec) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            name=check.name,
            asset=_checked_asset(table, check),
            description=f"{check.description} ({check.severity}; scope: {check.scope})",
            blocking=check.severity == "ERROR",
        )
        for check in table.all_checks
    ]


def _previous_metadata(instance: dg.DagsterInstance, table: TableSpec) -> dict[str, dict[str, Any]]:
    """The metadata each output's last materialization recorded (empty when never materialized)."""
    previous: dict[str, dict[str, Any]] = {}
    with timings.span("previous_state", table.name):
        for name in table.outputs:
            event = instance.get_latest_materialization_event(dg.AssetKey(name))
            previous[name] = dict(event.asset_materialization.metadata) if event and event.asset_materialization else {}
    return previous


def _previous_checks(
    instance: dg.DagsterInstance, table: TableSpec, selected: frozenset[str]
) -> dict[str, dict[str, Any]]:
    """The last completed evaluation of each check in ``selected``: a full-table check's metadata
    says which table versions it saw, so an unchanged pair need not be scanned again; a check of
    the changed rows keeps its outcome after a run that changed nothing."""
    previous: dict[str, dict[str, Any]] = {}
    for check in table.all_checks:
        if check.name not in selected:
            continue
        key = dg.AssetCheckKey(dg.AssetKey(_checked_asset(table, check)), check.name)
        # The newest record may be this run's own planned evaluation: take the newest completed one
        # with figures of its own (one after a run that read nothing repeats only the outcome).
        for record in instance.event_log_storage.get_asset_check_execution_history(key, limit=10):
            evaluation = record.event.asset_check_evaluation if record.event else None
            if evaluation is not None:
                found = {"passed": evaluation.passed, "metadata": dict(evaluation.metadata)}
                previous.setdefault(check.name, found)
                if NOTHING_NEW not in evaluation.metadata:
                    previous[check.name] = found
                    break
    return previous


def _check_result(table: TableSpec, check: TableCheck, outcome: CheckOutcome) -> dg.AssetCheckResult:
    severity = dg.AssetCheckSeverity.ERROR if check.severity == "ERROR" else dg.AssetCheckSeverity.WARN
    return dg.AssetCheckResult(
        asset_key=_checked_asset(table, check),
        check_name=check.name,
        passed=outcome.passed,
        severity=severity,
        metadata={"scope": check.scope, **outcome.metadata},
        description="Nothing new to check: the run changed no row." if NOTHING_NEW in outcome.metadata else None,
    )


def build_table_asset(table: TableSpec, paths: LakehousePaths, tables: Sequence[TableSpec] = ()) -> dg.AssetsDefinition:
    """One Dagster multi-asset per streaming table: the table and its quarantine table.

    :param tables: every declared table, to name a lookup input whose feed last failed.
    """
    checks_by_name = {c.name: c for c in table.all_checks}
    # The checks whose evaluation follows on from their last one, which is looked up first.
    follows = frozenset(n for n, c in checks_by_name.items() if follows_last_evaluation(c, table.sink.unique_keys()))
    feeds = lookup_feeds(table, tables)

    @dg.multi_asset(
        name=table.name,
        specs=_specs(table, paths),
        check_specs=_check_specs(table),
        pool=f"lakehouse/{table.name}",
        # Selecting either the table or its quarantine runs the one query that writes both.
        can_subset=True,
        description=table.description,
        op_tags={"dagster/priority": str(table.priority)} if table.priority else None,
    )
    def _materialize(
        context: dg.AssetExecutionContext,
        config: StreamingTableConfig,
        spark: LazyPySparkResource,
        lakehouse: LakehouseResource,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        checks = frozenset(key.name for key in context.selected_asset_check_keys)
        fresh = config.full_refresh
        request = TableRequest(
            table=table.name,
            assets=frozenset(key.to_user_string() for key in context.selected_asset_keys),
            checks=checks,
            full_refresh=fresh,
            previous={} if fresh else _previous_metadata(context.instance, table),
            previous_checks={} if fresh else _previous_checks(context.instance, table, follows & checks),
            earlier_checks=lambda names: _previous_checks(context.instance, table, names),
            writer=f"run {context.run.run_id}",
            run_id=context.run.run_id,
            declared_tables=tuple(t.name for t in tables) or None,
        )
        try:
            lakehouse.paths.check_root()
        except RootUnusable as error:
            raise dg.Failure(description=str(error)) from None
        try:
            stale = stale_lookups(context.instance, feeds) if feeds else {}
        except Exception as error:  # noqa: BLE001 - a diagnostic must never fail the table it describes
            context.log.debug(f"{table.name}: could not tell whether its lookups are current: {error!r}")
            stale = {}
        for note in stale.values():
            context.log.warning(f"{table.name}: {note}")
        try:
            events = table_events(
                deferred_session(lambda: spark.spark_session),
                lakehouse.paths,
                table,
                request,
                log=context.log.debug,
                warn=context.log.warning,
                info=context.log.info,
                renew=spark.renew_session if isinstance(spark, SparkResource) else None,
                watch=spark.engine_watch if isinstance(spark, SparkResource) else None,
            )
            for event in events:
                if isinstance(event, Materialized):
                    # The Delta version is the data version: a run that changed nothing leaves it
                    # as it was, and Dagster does not mark the readers unsynced.
                    version = event.metadata.get("delta_version")
                    data_version = dg.DataVersion(str(version.value)) if version is not None else None
                    metadata = event.metadata
                    if "dagster/column_schema" in metadata:
                        quarantine = table.quarantine
                        own = (
                            table.column_descriptions
                            if event.asset == table.name or quarantine is None
                            else quarantine.column_descriptions
                        )
                        schema = describe_columns(metadata["dagster/column_schema"], own)
                        metadata = {**metadata, "dagster/column_schema": schema}
                    if stale and event.asset == table.name:
                        metadata = {**metadata, "stale_lookups": "; ".join(stale.values())}
                    yield dg.MaterializeResult(asset_key=event.asset, metadata=metadata, data_version=data_version)
                else:
                    yield _check_result(table, checks_by_name[event.check], event.outcome)
        except EngineUnavailable as error:
            # One sentence for the UI; the engine's own trace stays in the event log.
            trace = "".join(traceback.format_exception(error.__cause__)) if error.__cause__ else ""
            raise dg.Failure(
                description=str(error), metadata={"cause": dg.MetadataValue.text(trace[-20000:])}
            ) from None
        except Exception as error:
            # A session that could not be created fails the step as its cause would have.
            cause = error.__cause__ if isinstance(error, SessionNotStarted) and error.__cause__ else error
            if isinstance(cause, LakehouseError):
                raise dg.Failure(description=str(cause)) from None
            lost = engine_lost(cause, current().spark_remote) or engine_refused(cause)
            if lost is None:
                raise
            raise dg.Failure(description=f"{table.name}: {lost}") from None

    return _materialize


def build_table_assets(tables: Sequence[TableSpec], paths: LakehousePaths) -> list[dg.AssetsDefinition]:
    return [build_table_asset(t, paths, tables) for t in tables]
