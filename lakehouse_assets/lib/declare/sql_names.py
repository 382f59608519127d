"""Names that come from data (a landed JSON key, a CSV header) as SQL identifiers: back-quoted,
a back-quote inside doubled, so a name is only ever a name where it reaches SQL."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier: ``a`b`` becomes ```a``b```."""
    return "`" + name.replace("`", "``") + "`"


def column(name: str) -> Column:
    """The top-level column ``name`` (dots and back-quotes in it are part of the name)."""
    return F.col(quote(name))
