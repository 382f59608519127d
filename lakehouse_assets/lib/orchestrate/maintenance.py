"""Nightly Delta maintenance per table: OPTIMIZE (compaction) and VACUUM with a safe retention.

Frequent ``availableNow`` runs leave many small files; OPTIMIZE compacts them into few large
ones (a ``dataChange=false`` commit, which streaming and change-feed readers skip), and VACUUM
deletes files no version within the retention still references. Each table's maintenance op
claims the table's pool ``lakehouse/<table>`` (and, on local roots, the same OS lock as the
writer), so it never runs while a run writes that table.

Readers of the table elsewhere in the project (streams and change feeds, flows included) still
need the files of every version they have yet to read, OPTIMIZE's compacted-away ones too: before
it compacts, the op reads where each reader stands (:mod:`~lakehouse_assets.lib.engine.state.readers`)
and VACUUM keeps every file removed since the oldest unread version was committed, however long
ago; when a reader's position cannot be told, VACUUM of that table is skipped, saying why.

The op reports, per Delta table (the table and its quarantine table), the active files and
bytes of the current version and the data files on storage, before and after, as an asset
observation (plotted over time on the asset's page) and as the op's output metadata.
"""

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import dagster as dg
from dagster_pyspark import LazyPySparkResource
from pyspark.sql import SparkSession

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.locking.writer_lock import writer_lock
from lakehouse_assets.lib.engine.state import delta_log, delta_sql, storage
from lakehouse_assets.lib.engine.state.readers import (
    Reader,
    ReaderPositionUnknown,
    Unread,
    oldest_unread,
    readers_of,
    retention_keeping,
)
from lakehouse_assets.lib.orchestrate.resources import LakehouseResource
from lakehouse_assets.lib.paths import LakehousePaths

MAINTENANCE_TAG = "lakehouse/maintenance"
SAFE_RETENTION_HOURS = 168  # Delta's own default: 7 days


class MaintenanceConfig(dg.Config):
    """What the nightly maintenance does; the defaults are safe."""

    optimize: bool = True
    """Compact small files (Delta OPTIMIZE)."""
    vacuum: bool = True
    """Delete unreferenced files older than the retention (Delta VACUUM)."""
    retention_hours: int = SAFE_RETENTION_HOURS
    """VACUUM retention; below 168 hours (7 days) is refused: a reader or a time-travel query
    older than the retention could lose files."""


def storage_stats(spark: SparkSession, path: str) -> dict[str, int]:
    """Active files/bytes of the current version, and all data files on storage."""
    detail = delta_sql.detail(spark, path)
    files, size = 0, 0
    for entry in storage.list_entries(path, recursive=True):
        if not entry.is_file or "/_delta_log/" in entry.path or entry.base_name.endswith(".crc"):
            continue
        files += 1
        size += int(entry.size or 0)
    return {
        "active_files": int(detail.get("numFiles") or 0),
        "active_bytes": int(detail.get("sizeInBytes") or 0),
        "stored_files": files,
        "stored_bytes": size,
    }


def _kept_for(unread: Unread | None, retention: int, configured: int) -> str:
    """How long VACUUM kept removed files and why, in one sentence for the run's metadata."""
    if unread is None:
        return f"{configured} hours as configured: no reader of the project has a version left to read"
    since = datetime.fromtimestamp(unread.since_ms / 1000, UTC).isoformat(timespec="seconds")
    what = "the versions since" if unread.version is None else f"version {unread.version} and later, from"
    why = f"{unread.reader} has yet to read {what} {since} ({unread.how})"
    return (
        f"{retention} hours, not {configured}: {why}"
        if retention > configured
        else f"{configured} hours as configured ({why})"
    )


def maintain_table(
    spark: SparkSession,
    paths: LakehousePaths,
    name: str,
    config: MaintenanceConfig,
    log: Callable[[str], None] = print,
    readers: Sequence[Reader] = (),
) -> dict[str, int | float | str] | None:
    """OPTIMIZE and VACUUM one Delta table, keeping what its readers have yet to read; the
    before/after figures and what VACUUM kept and why, or None if the table is missing.

    :param spark: the session.
    :param paths: the data root.
    :param name: the table (a table of the project or its quarantine).
    :param config: what to do, and the retention asked for.
    :param log: where progress lines go.
    :param readers: the tables and flows of the project that read ``name`` (:func:`readers_of`).
    """
    path = paths.table(name)
    if not delta_sql.is_delta_table(path):
        log(f"{name}: no Delta table at {path} yet; nothing to maintain")
        return None
    started = time.monotonic()
    before = storage_stats(spark, path)
    unread, unknown = None, ""
    if config.vacuum and readers:  # where they stand before OPTIMIZE adds a version nobody read
        try:
            table_id = delta_log.delta_table_id(path) or delta_sql.table_id(spark, path)
            unread = oldest_unread(paths, name, path, table_id, readers)
        except ReaderPositionUnknown as error:
            unknown = str(error)
    compacted: dict[str, int] = {"files_removed": 0, "files_added": 0}
    if config.optimize:
        removed, added = delta_sql.optimize(spark, path)
        compacted = {"files_removed": removed, "files_added": added}
        log(f"{name}: OPTIMIZE compacted {compacted['files_removed']} files into {compacted['files_added']}")
    retention, kept_for = 0, "no VACUUM asked"
    if config.vacuum and unknown:
        kept_for = f"VACUUM skipped: {unknown}"
        log(f"{name}: {kept_for}")
    elif config.vacuum:
        retention = retention_keeping(config.retention_hours, unread, int(time.time() * 1000))
        delta_sql.vacuum(spark, path, float(retention))
        kept_for = _kept_for(unread, retention, config.retention_hours)
        log(f"{name}: VACUUM kept {kept_for}")
    after = storage_stats(spark, path)
    log(f"{name}: {before['stored_files']} -> {after['stored_files']} files on storage")
    figures: dict[str, int | float | str] = {
        **{f"{k}_before": v for k, v in before.items()},
        **{f"{k}_after": v for k, v in after.items()},
        "optimize_files_removed": compacted["files_removed"],
        "optimize_files_added": compacted["files_added"],
        "retention_hours": retention,
        "vacuum_kept": kept_for,
        "duration_s": round(time.monotonic() - started, 3),
    }
    if unread is not None:
        figures["oldest_reader"] = unread.reader
        if unread.version is not None:
            figures["oldest_reader_version"] = unread.version
    return figures


def maintenance_job_name(table: str) -> str:
    return f"maintain_{table}"


def build_maintenance_job(table: TableSpec, readers: dict[str, list[Reader]] | None = None) -> dg.JobDefinition:
    """The job that maintains ``table`` and its quarantine.

    :param table: the table.
    :param readers: per output, the tables and flows of the project reading it (:func:`readers_of`).
    """
    readers = readers or {}

    @dg.op(
        name=f"optimize_vacuum_{table.name}",
        pool=f"lakehouse/{table.name}",
        description=f"OPTIMIZE and VACUUM {', '.join(table.outputs)}.",
        tags={"kind": "delta"},
    )
    def _maintain(
        context: dg.OpExecutionContext,
        config: MaintenanceConfig,
        spark: LazyPySparkResource,
        lakehouse: LakehouseResource,
    ):
        if config.vacuum and config.retention_hours < SAFE_RETENTION_HOURS:
            raise dg.Failure(
                description=(
                    f"retention_hours={config.retention_hours} is below the safe minimum of "
                    f"{SAFE_RETENTION_HOURS} hours (7 days); VACUUM could delete files a reader still needs."
                )
            )
        session = spark.spark_session
        paths = lakehouse.paths
        summary: dict[str, int | float | str] = {}

        def waiting(seconds: float | None = None, holder: str | None = None) -> None:
            context.log.info(
                f"{table.name}: waiting for the writer's lock" + (f" ({holder})" if holder else "")
                if seconds is None
                else f"waited {seconds:.1f}s for the lock"
            )

        with writer_lock(paths).hold(table.name, waiting, f"maintenance run {context.run.run_id}"):
            for name in table.outputs:
                figures = maintain_table(session, paths, name, config, context.log.info, readers.get(name, []))
                if figures is None:
                    continue
                yield dg.AssetObservation(
                    asset_key=name,
                    metadata={f"maintenance/{k}": v for k, v in figures.items()},
                    description=f"Nightly maintenance of {name}",
                )
                for key, value in figures.items():
                    summary[f"{name}/{key}"] = value
        yield dg.Output(None, metadata=summary)

    @dg.job(
        name=maintenance_job_name(table.name),
        description=(
            f"Delta maintenance of {', '.join(table.outputs)}: OPTIMIZE, then VACUUM keeping "
            f"{SAFE_RETENTION_HOURS} hours (configurable, never less), longer when a reader of the project "
            "has older versions left to read. Runs in the pool "
            f"lakehouse/{table.name}, so never while the table is being written."
        ),
        tags={MAINTENANCE_TAG: "true", "lakehouse/table": table.name},
    )
    def _job() -> None:
        _maintain()

    return _job


def build_maintenance_jobs(tables: Sequence[TableSpec]) -> dict[str, dg.JobDefinition]:
    """A maintenance job per table that writes a Delta table under the root, each knowing the
    readers of its outputs among ``tables``.

    :param tables: every table of the project.
    """
    return {
        t.name: build_maintenance_job(t, {name: readers_of(tables, name) for name in t.outputs})
        for t in tables
        if t.writes_delta
    }
