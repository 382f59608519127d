"""Markdown built from data for Dagster's UI: landed values, file names, column names.

Every ASCII punctuation character is backslash-escaped (CommonMark lets any of them be), so no
value can open a link, an image, emphasis, code, a heading, a table cell or raw HTML: it shows
as written. Line breaks become spaces (a table row and a list item are one line each); other
control characters and bidirectional overrides show as escapes (``\\x1b``, ``\\u202e``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_PUNCTUATION = re.compile("[" + re.escape(string.punctuation) + "]")
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\u2028\u2029]")
# Control characters, and the bidirectional overrides that reorder what is shown.
_CONTROLS = re.compile("[\\x00-\\x1f\\x7f-\\x9f\\u202a-\\u202e\\u2066-\\u2069]")


def escape(value: Any) -> str:
    """``value`` as Markdown text that renders exactly as ``str(value)`` (on one line).

    :param value: anything; None is the empty string.
    """
    text = "" if value is None else str(value)
    text = _LINE_BREAKS.sub(" ", text)
    text = _CONTROLS.sub(lambda found: found.group().encode("unicode_escape").decode(), text)
    return _PUNCTUATION.sub(lambda found: "\\" + found.group(), text)


def shortened(value: Any, width: int) -> str:
    """``str(value)`` cut to ``width`` characters (the last one an ellipsis), before escaping.

    :param value: anything; None is the empty string.
    :param width: the most characters kept.
    """
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], width: int = 40) -> str:
    """A Markdown table of ``rows``, each cell cut to ``width`` characters and escaped.

    :param rows: the rows, by column name.
    :param columns: the columns shown, in order.
    :param width: the most characters of a cell shown.
    """
    lines = ["| " + " | ".join(escape(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(escape(shortened(r.get(c), width)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def bullet_list(items: Iterable[Any]) -> str:
    """A Markdown list, one escaped item per line.

    :param items: the items, shown as ``str(item)`` without leading or trailing spaces.
    """
    return "\n".join(f"- {escape(str(item).strip())}" for item in items)
