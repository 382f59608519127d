"""Text a declaration holds, read without Spark so a malformed one stops the declaration rather
than a run: column definitions written as DDL (``"a string, `b c` decimal(10,2)"``) and
durations (``"30 days"``)."""

from __future__ import annotations

import re
from datetime import timedelta

from lakehouse_assets.lib.errors import DeclarationError


def ddl_columns(ddl: str) -> dict[str, str]:
    """``"a string, `b c` decimal(10,2), d struct<x:int,y:int>"`` as ``{name: type}``, in order.

    :param ddl: column definitions separated by top-level commas; names may be back-quoted.
    """
    columns: dict[str, str] = {}
    for part in _top_level(ddl):
        match = re.fullmatch(r"\s*(`(?:[^`]|``)+`|[A-Za-z_][\w]*)\s*:?\s+(.+?)\s*", part, re.S)
        if not match:
            raise DeclarationError(f"schema {ddl!r}: {part.strip()!r} is not 'name type'")
        name = match.group(1)
        if name.startswith("`"):
            name = name[1:-1].replace("``", "`")
        columns[name] = match.group(2)
    if not columns:
        raise DeclarationError(f"schema {ddl!r} names no column")
    return columns


def _top_level(ddl: str) -> list[str]:
    parts, depth, start, quoted = [], 0, 0, False
    for i, char in enumerate(ddl):
        if char == "`":
            quoted = not quoted
        elif not quoted and char in "<(":
            depth += 1
        elif not quoted and char in ">)":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            parts.append(ddl[start:i])
            start = i + 1
    parts.append(ddl[start:])
    return [p for p in parts if p.strip()]


_UNITS = {"minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}


def duration(text: str) -> timedelta:
    """``"30 days"``, ``"12 hours"``, ``"1 week"``, ``"90 minutes"`` as a duration.

    :param text: a number and a unit (minutes, hours, days or weeks).
    :raises DeclarationError: the text is not a number and a unit.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(minute|hour|day|week)s?\s*", text.lower())
    if not match:
        raise DeclarationError(f"{text!r} is not a duration such as '30 days', '12 hours' or '1 week'")
    return timedelta(seconds=float(match[1]) * _UNITS[match[2]])
