"""Landed files set aside (too large, a link, unreadable, failing every read): list them, and
take them back in once fixed.

    python -m lakehouse_assets.set_aside                          # every file set aside, and why
    python -m lakehouse_assets.set_aside retake bronze_events     # all of a table's, back in
    python -m lakehouse_assets.set_aside retake bronze_events bomb.json.gz

A file taken back in is read by the table's next run (a sensor sees it land); one that still
cannot be taken in is set aside again. ``--tables`` names the package of your own tables.
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lakehouse_assets.lib import LakehousePaths, collect_tables
from lakehouse_assets.lib.engine.intake.commands import held_files, retake
from lakehouse_assets.lib.errors import LakehouseError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Landed files set aside: list them, or take them back in.")
    parser.add_argument("--tables", default="lakehouse_assets.defs", help="the package declaring the tables")
    commands = parser.add_subparsers(dest="command")
    back = commands.add_parser("retake", help="move set-aside files back into their landing folder")
    back.add_argument("table", help="the table whose landing folder they belong to")
    back.add_argument("names", nargs="*", help="the files (default: every one of the table's)")
    args = parser.parse_args(argv)
    paths, tables = LakehousePaths.from_env(), collect_tables(args.tables)
    console = Console(highlight=False, width=None if Console().is_terminal else 200)
    if args.command == "retake":
        table = next((t for t in tables if t.name == args.table), None)
        if table is None:
            print(f"no table named {args.table} in {args.tables}", file=sys.stderr)
            return 2
        try:
            moved = retake(paths, table, args.names or None, lambda line: console.print(escape(line)))
        except LakehouseError as error:
            print(error, file=sys.stderr)
            return 1
        console.print(f"{len(moved)} file(s) back in; the next run of {escape(table.name)} reads them")
        return 0
    held = held_files(paths, tables)
    if not held:
        console.print("no landed file is set aside")
        return 0
    listing = Table("table", "file", "bytes", "set aside", "why", "now at")
    for item in held:
        record = item.record
        listing.add_row(
            *(escape(str(v)) for v in (item.table, record.name, record.size, record.at, record.reason, item.location))
        )
    console.print(listing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
