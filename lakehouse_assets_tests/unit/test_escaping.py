"""Landed values are shown as written: in the SQL command line's table (no rich markup, no
terminal control sequence) and in the Markdown of a materialization's metadata (no link, image,
emphasis, HTML or extra cell), rendered here by a real CommonMark parser with tables."""

from __future__ import annotations

import html
import io
import re

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from lakehouse_assets.lib.orchestrate import markdown
from lakehouse_assets.sql import print_result

pytestmark = pytest.mark.unit

HOSTILE = [
    "[/x]",
    "[bold red]loud[/bold red] :smile:",
    "\x1b[2J\x1b[31mred",
    "a | b",
    "**strong** _em_ `code` ~~gone~~",
    "[click](javascript:alert(1))",
    "![img](http://example.com/x.png)",
    "<script>alert(1)</script> &amp; &lt;",
    "# heading",
    "1. first",
    "- item",
    "line one\nline two\r\nthree",
    "back\\slash \\*",
    "https://example.com www.example.com",
    "\u202egnp.exe",
]
ALLOWED_TAGS = {"table", "thead", "tbody", "tr", "th", "td", "ul", "li", "p"}


def test_the_sql_command_line_prints_values_as_written() -> None:
    out = io.StringIO()
    console = Console(file=out, width=400, color_system=None, legacy_windows=False)
    print_result(console, ["[b]name[/b]", "value"], [(f"row{i}", value) for i, value in enumerate(HOSTILE)], 100)
    printed = out.getvalue()
    assert "\x1b" not in printed and "\u202e" not in printed, "a control sequence reached the terminal"
    assert "[b]name[/b]" in printed
    for value in HOSTILE:
        for line in value.splitlines():
            visible = line.replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")
            assert visible in printed, f"{value!r} is not shown as written"
    assert printed.rstrip().endswith(f"{len(HOSTILE)} rows")


def _one_line(value: str) -> str:
    """How Markdown built from ``value`` must read: line breaks as spaces, controls as escapes."""
    return re.sub(r"\r\n|\n", " ", value).replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")


def _rendered(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(text)


def _tags(rendered: str) -> set[str]:
    return set(re.findall(r"</?([a-z0-9]+)", rendered))


def test_a_preview_table_shows_each_value_in_its_own_cell_as_written() -> None:
    rows = [{"k": i, "[v](x)": value} for i, value in enumerate(HOSTILE)]
    rendered = _rendered(markdown.table(rows, ["k", "[v](x)"], width=200))
    assert _tags(rendered) <= ALLOWED_TAGS, _tags(rendered)
    cells = [html.unescape(c) for c in re.findall(r"<t[dh]>(.*?)</t[dh]>", rendered)]
    expected = ["k", "[v](x)"]
    for i, value in enumerate(HOSTILE):
        expected += [str(i), _one_line(value)]
    assert cells == expected


def test_a_long_value_is_cut_before_it_is_escaped() -> None:
    rendered = _rendered(markdown.table([{"v": "*" * 100}], ["v"], width=10))
    assert html.unescape(re.findall(r"<td>(.*?)</td>", rendered)[0]) == "*" * 9 + "…"


def test_a_list_of_warnings_shows_each_as_written() -> None:
    rendered = _rendered(markdown.bullet_list(HOSTILE))
    assert _tags(rendered) <= ALLOWED_TAGS, _tags(rendered)
    items = [html.unescape(i) for i in re.findall(r"<li>(.*?)</li>", rendered, re.S)]
    assert items == [_one_line(value).strip() for value in HOSTILE]
