"""Tables by name: every Delta table under the data root registered in Spark's catalog as an
external table at its path, so ``spark.table("silver_events")`` and SQL can name it.

The data root is the record. A run registers a table the first time it writes it; the engine
(``make engine``) and ``python -m lakehouse_assets.sql`` register every table under the root
when they start. Registering is idempotent and never touches data: a name already registered at
another location is moved only when it is an external Delta table (what this module creates),
never a table someone made in the catalog themselves.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession

from lakehouse_assets.lib.engine.state import delta_log, storage
from lakehouse_assets.lib.paths import LakehousePaths


def quoted(name: str) -> str:
    """``name`` as a SQL identifier (back-quoted, so any table name is one)."""
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _same_location(a: str, b: str) -> bool:
    def plain(uri: str) -> str:
        for prefix in ("file://", "file:"):
            if uri.startswith(prefix):
                uri = uri[len(prefix) :]
                break
        return uri.rstrip("/")

    return plain(a) == plain(b)


def _registered(spark: SparkSession, name: str) -> dict[str, str] | None:
    """The catalog's ``Type``, ``Location`` and ``Provider`` of ``name`` (None: not registered)."""
    if not spark.catalog.tableExists(name):
        return None
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {quoted(name)}").collect()
    return {r["col_name"]: (r["data_type"] or "") for r in rows if r["col_name"] in ("Type", "Location", "Provider")}


def register_table(spark: SparkSession, name: str, path: str, warn: Callable[[str], None] | None = None) -> bool:
    """Name the Delta table at ``path`` ``name`` in the session's catalog; True when this changed
    the catalog. A name held by another kind of table is left alone (``warn`` says so)."""
    held = _registered(spark, name)
    if held is not None:
        if _same_location(held.get("Location", ""), path):
            return False
        if held.get("Type", "").upper() != "EXTERNAL" or held.get("Provider", "").lower() != "delta":
            if warn is not None:
                warn(f"{name}: the catalog already has a table of that name ({held}); {path} is not registered")
            return False
        spark.sql(f"DROP TABLE IF EXISTS {quoted(name)}")  # external: its files stay
    spark.sql(f"CREATE TABLE IF NOT EXISTS {quoted(name)} USING delta LOCATION {_literal(path)}")
    return True


def _marker(paths: LakehousePaths, name: str) -> str:
    return f"{paths.root}/_lakehouse/registered/{name}"


def registered(paths: LakehousePaths, name: str) -> bool:
    """Whether a run registered ``name`` at its path under the data root (:func:`mark_registered`),
    read from a file: a run need not ask Spark's catalog again. The engine and the SQL command
    still register every table when they start (a catalog made anew)."""
    return storage.read_text(_marker(paths, name)) == paths.table(name)


def mark_registered(paths: LakehousePaths, name: str) -> None:
    """Note that ``name`` is registered at its path under the data root."""
    storage.write_text(_marker(paths, name), paths.table(name))


def table_names(paths: LakehousePaths) -> list[str]:
    """The Delta tables under the data root (folders of ``tables/`` with a commit)."""
    return sorted(
        n for n in storage.list_names(f"{paths.root}/tables") if delta_log.delta_version(paths.table(n)) is not None
    )


def register_tables(spark: SparkSession, paths: LakehousePaths, warn: Callable[[str], None] | None = None) -> list[str]:
    """Register every Delta table under the data root; the names this added or moved."""
    return [name for name in table_names(paths) if register_table(spark, name, paths.table(name), warn)]
