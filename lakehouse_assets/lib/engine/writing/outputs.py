"""Where a table's rows land, by the kind of its sink: the Delta table of its name under the data
root, the Delta table at a sink's own path (:func:`~lakehouse_assets.lib.declare.sinks.to_delta`),
or no Delta table at all (:func:`~lakehouse_assets.lib.declare.sinks.to_kafka`). A new kind of
sink answers through :attr:`~lakehouse_assets.lib.declare.sinks.TableSink.writes_table` and
:meth:`~lakehouse_assets.lib.declare.sinks.TableSink.own_path`; the full refresh and the
missing-checkpoint guard ask here."""

from __future__ import annotations

from lakehouse_assets.lib.declare.sinks import TableSink
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.paths import LakehousePaths


def sink_table_path(sink: TableSink, paths: LakehousePaths, table: str) -> str | None:
    """The Delta table ``sink`` writes the rows of ``table`` into, or None (not a Delta table).

    :param sink: the table's sink.
    :param paths: the data root.
    :param table: the table's name.
    """
    return paths.table(table) if sink.writes_table else sink.own_path()


def delta_output_paths(paths: LakehousePaths, table: TableSpec) -> dict[str, str]:
    """Per output of ``table`` that is a Delta table (itself, per its sink, and its quarantine),
    where that table is.

    :param paths: the data root.
    :param table: the declared table.
    """
    own = sink_table_path(table.sink, paths, table.name)
    found = {table.name: own} if own is not None else {}
    if table.quarantine:
        found[table.quarantine.table] = paths.table(table.quarantine.table)
    return found
