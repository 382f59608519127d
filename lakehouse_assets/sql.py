"""Query the lakehouse's tables by name and print the result as a table.

    python -m lakehouse_assets.sql "SELECT category, sum(revenue) FROM gold_hourly_revenue GROUP BY 1"

Runs on the Spark Connect engine when ``SPARK_REMOTE`` is set, else on an embedded session.
Every Delta table under the data root (``LAKEHOUSE_ROOT``) is registered first, under its own
name (:mod:`lakehouse_assets.lib.engine.catalog`).
"""

from __future__ import annotations

import argparse
import logging
import sys

from pyspark.errors import PySparkException
from rich.console import Console
from rich.table import Table

from lakehouse_assets.lib.engine.catalog import register_tables, table_names
from lakehouse_assets.lib.settings import LakehousePaths
from lakehouse_assets.lib.spark.session import get_spark


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run one SQL statement on the lakehouse's tables, by name.")
    parser.add_argument("statement", help='for example "SELECT * FROM silver_events LIMIT 5"')
    parser.add_argument("--limit", type=int, default=100, help="rows to print at most (default 100)")
    args = parser.parse_args(argv)
    console = Console(width=None if Console().is_terminal else 160)
    paths = LakehousePaths.from_env()
    # PySpark logs every failed statement's context (with the JVM trace) as well as raising it.
    logging.getLogger("SQLQueryContextLogger").disabled = True
    spark = get_spark()
    register_tables(spark, paths, warn=lambda note: print(f"note: {note}", file=sys.stderr))
    try:
        result = spark.sql(args.statement)
        rows = result.limit(args.limit + 1).collect()
    except PySparkException as error:
        names = ", ".join(table_names(paths)) or "none yet"
        print(f"lakehouse_assets.sql: {_first_line(error)} (tables under {paths.root}: {names})", file=sys.stderr)
        return 1
    if not result.columns:
        console.print("OK")
        return 0
    shown = Table(*result.columns, title=None, show_lines=False)
    for row in rows[: args.limit]:
        shown.add_row(*("NULL" if value is None else str(value) for value in row))
    console.print(shown)
    count = min(len(rows), args.limit)
    more = " (more not shown: --limit)" if len(rows) > args.limit else ""
    console.print(f"{count} row{'' if count == 1 else 's'}{more}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
