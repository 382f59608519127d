"""Print what the last materializations left: rows per table, where they live, how to look.

Reads the Dagster instance's materialization metadata, so it starts no Spark.
"""

from __future__ import annotations

import dagster as dg
from rich.console import Console
from rich.table import Table

from lakehouse_assets.definitions import defs
from lakehouse_assets.lib.paths import LakehousePaths


def _value(metadata: dict, key: str) -> object:
    entry = metadata.get(key)
    return getattr(entry, "value", entry)


def _text(value: object) -> str:
    return "-" if value is None else str(value)


def main() -> None:
    console = Console(width=None if Console().is_terminal else 120)
    paths = LakehousePaths.from_env()
    graph = defs().resolve_asset_graph()
    table = Table(title="lakehouse_assets: tables after the last run")
    for column in ("group", "table", "rows", "new rows", "quarantined", "Delta version"):
        table.add_column(column, justify="right" if column not in ("group", "table") else "left")
    with dg.DagsterInstance.get() as instance:
        keys = sorted(graph.materializable_asset_keys, key=lambda k: (graph.get(k).group_name != "bronze",
                                                                      graph.get(k).group_name != "silver",
                                                                      k.to_user_string()))  # fmt: skip
        for key in keys:
            event = instance.get_latest_materialization_event(key)
            metadata = event.asset_materialization.metadata if event and event.asset_materialization else {}
            table.add_row(
                graph.get(key).group_name,
                key.to_user_string(),
                _text(_value(metadata, "dagster/row_count")),
                _text(_value(metadata, "rows_written")),
                _text(_value(metadata, "rows_quarantined")),
                _text(_value(metadata, "delta_version")),
            )
    console.print(table)
    console.print(f"Tables:      {paths.root}/tables/<table>  (Delta, path-based)")
    console.print(f"Landing:     {paths.root}/landing/<source>   (`make land` drops a new batch)")
    console.print(f"Checkpoints: {paths.root}/checkpoints/<table>")
    console.print("UI:          `make dev`, then open http://127.0.0.1:3000 (assets, lineage, runs, checks)")
    console.print("Again:       `make demo` lands another batch and processes only what is new.")


if __name__ == "__main__":
    main()
