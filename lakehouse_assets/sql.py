"""Query the lakehouse's tables by name and print the result as a table.

    python -m lakehouse_assets.sql "SELECT category, sum(revenue) FROM gold_hourly_revenue GROUP BY 1"

Runs on the Spark Connect engine when ``SPARK_REMOTE`` is set, else on an embedded session.
Every Delta table under the data root (``LAKEHOUSE_ROOT``) is registered first, under its own
name (:mod:`lakehouse_assets.lib.engine.state.catalog`), after the event log
(``_lakehouse_events``) has taken in the events of the runs since it was last brought up to date
(:mod:`lakehouse_assets.lib.engine.state.event_log`).
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.errors import PySparkException
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lakehouse_assets.lib.engine.errors import engine_refused
from lakehouse_assets.lib.engine.state import event_log
from lakehouse_assets.lib.engine.state.catalog import register_tables, table_names
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.spark.session import get_spark

# Characters a terminal would act on rather than show: C0 and C1 controls (tab and line feed
# kept) and the bidirectional overrides that reorder what is shown.
_UNSHOWABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def shown(value: Any) -> Text:
    """A value as the terminal shows it: as written (a ``Text``, so no rich markup or emoji code
    in it is interpreted), with characters a terminal would act on as escapes (``\\x1b``).

    :param value: a cell or a column name (None is shown as NULL).
    """
    text = "NULL" if value is None else str(value)
    return Text(_UNSHOWABLE.sub(lambda found: found.group().encode("unicode_escape").decode(), text))


def print_result(console: Console, columns: Sequence[str], rows: Sequence[Sequence[Any]], limit: int) -> None:
    """Print ``rows`` (at most ``limit``) under ``columns`` as a table, then the row count.

    :param console: where to print.
    :param columns: the result's column names.
    :param rows: the rows fetched: ``limit + 1`` of them say there are more.
    :param limit: how many rows to show at most.
    """
    table = Table(title=None, show_lines=False)
    for column in columns:
        table.add_column(shown(column))
    for row in rows[:limit]:
        table.add_row(*(shown(value) for value in row))
    console.print(table)
    count = min(len(rows), limit)
    more = " (more not shown: --limit)" if len(rows) > limit else ""
    console.print(Text(f"{count} row{'' if count == 1 else 's'}{more}"))


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
    try:
        event_log.sync(spark, paths)
        register_tables(spark, paths, warn=lambda note: print(f"note: {note}", file=sys.stderr))
        result = spark.sql(args.statement)
        rows = result.limit(args.limit + 1).collect()
    except PySparkException as error:
        refused = engine_refused(error)
        if refused:
            print(f"lakehouse_assets.sql: {refused}", file=sys.stderr)
            return 1
        names = ", ".join(table_names(paths)) or "none yet"
        print(f"lakehouse_assets.sql: {_first_line(error)} (tables under {paths.root}: {names})", file=sys.stderr)
        return 1
    if not result.columns:
        console.print("OK")
        return 0
    print_result(console, result.columns, rows, args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
