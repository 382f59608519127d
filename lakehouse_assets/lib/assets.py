"""Turning declared streaming tables into Dagster assets."""

import inspect
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from lakehouse_assets.lib.checks import CheckContext, CheckOutcome, TableCheck
from lakehouse_assets.lib.metadata import run_metadata, table_metadata
from lakehouse_assets.lib.runner import LakehouseError, RunReport, TableRunner
from lakehouse_assets.lib.settings import LakehousePaths
from lakehouse_assets.lib.table import StreamingTable

KINDS = {"spark", "delta"}


class LakehouseResource(dg.ConfigurableResource):
    """The data root (a path or URI) under which landing files, tables and checkpoints live."""

    root: str

    @property
    def paths(self) -> LakehousePaths:
        return LakehousePaths(self.root)


class StreamingTableConfig(dg.Config):
    """Run configuration of a streaming table."""

    full_refresh: bool = False
    """Reset the table's checkpoint, empty it, and rebuild it from all of its inputs."""


def _code_reference(table: StreamingTable) -> dg.CodeReferencesMetadataValue:
    fn = inspect.unwrap(table.transform)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # code references are beta in Dagster 1.13
        return dg.CodeReferencesMetadataValue(
            code_references=[
                dg.LocalFileCodeReference(
                    file_path=inspect.getsourcefile(fn) or "",
                    line_number=inspect.getsourcelines(fn)[1],
                    label=table.name,
                )
            ]
        )


def _specs(table: StreamingTable, paths: LakehousePaths) -> list[dg.AssetSpec]:
    deps = [dg.AssetKey(t) for t in table.upstream_tables]
    common = dict(
        group_name=table.group,
        deps=deps,
        kinds=KINDS,
        owners=table.owners,
        tags=table.tags,
        freshness_policy=(
            dg.FreshnessPolicy.time_window(fail_window=table.freshness) if table.freshness else None
        ),
    )
    specs = [
        dg.AssetSpec(
            key=table.name,
            description=table.description,
            metadata={
                "dagster/uri": paths.table(table.name),
                "dagster/code_references": _code_reference(table),
                "landing_sources": ", ".join(table.landing_sources) or "-",
            },
            **common,
        )
    ]
    if table.quarantine:
        specs.append(
            dg.AssetSpec(
                key=table.quarantine.table,
                description=f"Rows of {table.name} that failed its expectations, with the names they failed.",
                metadata={"dagster/uri": paths.table(table.quarantine.table)},
                **common,
            )
        )
    return specs


def _check_specs(table: StreamingTable) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            name=check.name,
            asset=table.name,
            description=f"{check.description} ({check.severity}; scope: {check.scope})",
            blocking=check.severity == "ERROR",
        )
        for check in table.all_checks
    ]


def _previous_metadata(instance: dg.DagsterInstance, table: StreamingTable) -> dict[str, dict[str, Any]]:
    """The metadata each output's last materialization recorded (empty when never materialized)."""
    previous: dict[str, dict[str, Any]] = {}
    for name in table.outputs:
        event = instance.get_latest_materialization_event(dg.AssetKey(name))
        previous[name] = dict(event.asset_materialization.metadata) if event and event.asset_materialization else {}
    return previous


def _previous_state(previous: dict[str, dict[str, Any]], table: StreamingTable) -> tuple[dict[str, int], dict[str, str] | None]:
    """Delta versions and schema recorded by each output's last materialization."""
    versions = {name: int(m["delta_version"].value) for name, m in previous.items() if "delta_version" in m}
    own = previous.get(table.name, {})
    schema = {c.name: c.type for c in own["dagster/column_schema"].value.columns} if "dagster/column_schema" in own else None
    return versions, schema


def _evaluate(check: TableCheck, ctx: CheckContext) -> CheckOutcome:
    try:
        return check.evaluate(ctx)
    except Exception as error:  # noqa: BLE001 - a check that cannot run fails, with the reason
        return CheckOutcome(False, {"error": f"check could not run: {str(error).splitlines()[0][:500]}"})


def _check_result(table: StreamingTable, check: TableCheck, outcome: CheckOutcome) -> dg.AssetCheckResult:
    severity = dg.AssetCheckSeverity.ERROR if check.severity == "ERROR" else dg.AssetCheckSeverity.WARN
    return dg.AssetCheckResult(
        asset_key=table.name,
        check_name=check.name,
        passed=outcome.passed,
        severity=severity,
        metadata={"scope": check.scope, **outcome.metadata},
    )


def build_table_asset(table: StreamingTable, paths: LakehousePaths) -> dg.AssetsDefinition:
    """One Dagster multi-asset per streaming table: the table and its quarantine table."""

    @dg.multi_asset(
        name=table.name,
        specs=_specs(table, paths),
        check_specs=_check_specs(table),
        pool=f"lakehouse/{table.name}",
        # Selecting either the table or its quarantine runs the one query that writes both.
        can_subset=True,
        description=table.description,
    )
    def _materialize(
        context: dg.AssetExecutionContext,
        config: StreamingTableConfig,
        spark: LazyPySparkResource,
        lakehouse: LakehouseResource,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        session = spark.spark_session
        runner = TableRunner(session, lakehouse.paths, context.log.info)
        selected_checks = {key.name for key in context.selected_asset_check_keys}
        checks = [c for c in table.all_checks if c.name in selected_checks]
        previous = {} if config.full_refresh else _previous_metadata(context.instance, table)
        versions, schema = _previous_state(previous, table)
        try:
            report: RunReport | None = runner.run(table, full_refresh=config.full_refresh)
        except LakehouseError as error:
            for check in checks:
                yield _check_result(table, check, CheckOutcome(False, {"error": f"the run failed: {error}"}))
            raise dg.Failure(description=str(error)) from None
        context.log.info(
            f"{table.name}: {report.rows_read} rows read, {report.rows_written} written, "
            f"{report.rows_quarantined} quarantined in {report.batches} micro-batches, {report.duration_s}s"
        )
        selected = {key.to_user_string() for key in context.selected_asset_keys}
        if table.name in selected:
            yield dg.MaterializeResult(
                asset_key=table.name,
                metadata={
                    **run_metadata(report),
                    **table_metadata(session, lakehouse.paths.table(table.name), previous.get(table.name)),
                },
            )
        if table.quarantine and table.quarantine.table in selected:
            yield dg.MaterializeResult(
                asset_key=table.quarantine.table,
                metadata={
                    "rows_written": report.rows_quarantined,
                    **table_metadata(
                        session, lakehouse.paths.table(table.quarantine.table), previous.get(table.quarantine.table)
                    ),
                },
            )
        check_context = CheckContext(session, lakehouse.paths, table.name, report, versions, schema)
        for check in checks:
            yield _check_result(table, check, _evaluate(check, check_context))

    return _materialize


def build_table_assets(tables: Sequence[StreamingTable], paths: LakehousePaths) -> list[dg.AssetsDefinition]:
    return [build_table_asset(t, paths) for t in tables]
