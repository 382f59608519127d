"""The headers of landed CSV files, for a ``landing(format="csv")`` input whose schema is inferred
or evolves: each file's header is read once, when the file is first examined, and kept beside
the input's schema (``<checkpoint>/_schemas/<parameter>/headers.json``) until a query has read it,
so its rows are read by column name whatever order or subset of columns the file has. Types are inferred per header
(Spark's own CSV inference), then merged.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass

from pyspark.sql import SparkSession

from lakehouse_assets.lib.engine.errors import engine_lost, unreadable_file
from lakehouse_assets.lib.engine.reading.landing_names import NO_GLOB
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.engine.state.delta_sql import sql_type
from lakehouse_assets.lib.errors import LakehouseError, LandedFileUnreadable, first_line
from lakehouse_assets.lib.settings import current

HEAD_BYTES = 1 << 20  # a header longer than this is not a header
csv.field_size_limit(HEAD_BYTES)
# Reader options the engine sets itself when it reads by header name.
OWN_OPTIONS = ("header", "inferschema", "enforceschema", "columnnameofcorruptrecord", "mode", "samplingratio")
# Type pairs found in two files' columns and the type both fit (anything else: string).
_WIDER = {
    frozenset(("int", "bigint")): "bigint",
    frozenset(("int", "double")): "double",
    frozenset(("bigint", "double")): "double",
    frozenset(("date", "timestamp")): "timestamp",
}


@dataclass(frozen=True)
class CsvPlan:
    """How a run's query reads the input's CSV rows: ``width`` positional columns; the headers
    of the files it may read whose header is not the schema's first columns in order; and the
    files it may read (a row of any other file stops the query)."""

    width: int
    headers: dict[str, list[str]]
    expected_files: list[str]


def _option(options: dict[str, str], *names: str, default: str) -> str:
    lower = {k.lower(): v for k, v in options.items()}
    return next((lower[n] for n in names if n in lower), default)


def has_header(options: dict[str, str]) -> bool:
    return _option(options, "header", default="true").lower() == "true"


def reader_options(options: dict[str, str]) -> dict[str, str]:
    """The input's reader options without those the engine sets itself (``OWN_OPTIONS``)."""
    return {k: v for k, v in options.items() if k.lower() not in OWN_OPTIONS}


def value_formats(options: dict[str, str]) -> dict[str, str]:
    """The reader's ``dateFormat`` and ``timestampFormat``, keyed ``date`` and ``timestamp``."""
    found = {
        "date": _option(options, "dateformat", default=""),
        "timestamp": _option(options, "timestampformat", default=""),
    }
    return {kind: pattern for kind, pattern in found.items() if pattern}


def _spark_char(text: str) -> str:
    """A separator option as Spark reads it: ``\\t`` is a tab, ``\\u0001`` that character."""
    if text.startswith("\\u") and len(text) == 6:
        return chr(int(text[2:], 16))
    return {"\\t": "\t", "\\n": "\n", "\\r": "\r", "\\\\": "\\"}.get(text, text)


def _first_record(text: str, options: dict[str, str]) -> list[str]:
    """The fields of the text's first record, found as Spark finds a header: blank lines and
    lines starting with the ``comment`` prefix are skipped first."""
    comment = _option(options, "comment", default="")
    start = 0
    for line in text.split("\n"):
        if line.strip() and not (comment and line.startswith(comment)):
            break
        start += len(line) + 1
    text = text[start:]
    sep = _spark_char(_option(options, "sep", "delimiter", default=","))
    quote = _option(options, "quote", default='"')
    escape = _option(options, "escape", default="\\")
    if len(sep) != 1:
        first = text.split("\n", 1)[0].rstrip("\r")
        return [f.strip().strip(quote) if quote else f for f in first.split(sep)] if first else []
    doubled = escape == quote  # RFC 4180: a quote inside quotes is written twice
    reader = csv.reader(
        io.StringIO(text),
        delimiter=sep,
        quotechar=quote or None,
        escapechar=None if doubled or not escape else escape,
        doublequote=doubled,
    )
    return next(reader, [])


def read_header(path: str, options: dict[str, str], columns: list[str] | None = None) -> list[str]:
    """The column names of the CSV file ``path`` (``.gz`` decompressed), as Spark names them: an
    empty name is ``_c<i>``, a repeated one (in any case) gets its position appended. Files
    without a header (``header`` false) are read by position: the ``columns`` known so far,
    then ``_c<i>``.

    :raises LakehouseError: the file cannot be read as text.
    """
    try:
        filesystem, inner = storage.resolve(path)
        with filesystem.open_input_stream(inner, compression="detect") as stream:
            head = stream.read(HEAD_BYTES)
        encoding = _option(options, "encoding", "charset", default="utf-8")
        text = head.decode(encoding, errors="replace").lstrip("\ufeff")
        row = _first_record(text, options)
    except (OSError, LookupError, csv.Error, EOFError) as error:
        raise LakehouseError(
            f"cannot read the header of landed file {path} ({error}); remove it or land a fixed copy"
        ) from None
    if not has_header(options):
        known = columns or []
        return [known[i] if i < len(known) else f"_c{i}" for i in range(len(row))]
    names = [n.strip() or f"_c{i}" for i, n in enumerate(row)]
    repeats = Counter(n.lower() for n in names)
    return [f"{n}{i}" if repeats[n.lower()] > 1 else n for i, n in enumerate(names)]


def headers_file(schema_folder: str) -> str:
    return f"{schema_folder}/headers.json"


def known_headers(schema_folder: str) -> dict[str, list[str]]:
    """Each examined file's header, by base name."""
    record = json.loads(storage.read_text(headers_file(schema_folder)) or '{"headers": [], "files": {}}')
    return {name: record["headers"][i] for name, i in record["files"].items()}


def record_headers(schema_folder: str, found: dict[str, list[str]]) -> None:
    """Keep the headers of newly examined files (distinct headers stored once)."""
    if not found:
        return
    every = {**known_headers(schema_folder), **found}
    distinct: list[list[str]] = []
    files = {}
    for name, header in sorted(every.items()):
        if header not in distinct:
            distinct.append(header)
        files[name] = distinct.index(header)
    storage.write_text(headers_file(schema_folder), json.dumps({"headers": distinct, "files": files}))


def infer_types(
    spark: SparkSession, headers: dict[str, list[str]], folder: str, options: dict[str, str]
) -> dict[str, str]:
    """Column name -> type over the files ``headers`` names, in order of first appearance:
    Spark's CSV inference on the files of each distinct header, merged (a column two files
    type differently takes the type both fit, else string)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, header in sorted(headers.items()):
        groups.setdefault(tuple(header), []).append(f"{folder}/{name}")
    merged: dict[str, str] = {}
    for columns, files in groups.items():
        try:
            schema = (
                spark.read.options(**reader_options(options))
                .option(NO_GLOB, "false")
                .option("header", has_header(options))
                .option("inferSchema", "true")
                .csv(files)
                .schema
            )
        except Exception as error:
            if engine_lost(error, current().spark_remote):
                raise
            failed = unreadable_file(error) or files[0]
            raise LandedFileUnreadable(
                f"{failed} is not a readable CSV file ({first_line(error)[:300]})", failed
            ) from None
        kinds = [sql_type(f.dataType) for f in schema.fields]
        for column, kind in zip(columns, kinds + ["string"] * (len(columns) - len(kinds)), strict=False):
            known = merged.get(column)
            merged[column] = kind if known in (None, kind) else _WIDER.get(frozenset((known, kind)), "string")
    return merged


def reading_plan(schema_folder: str, columns: list[str]) -> CsvPlan:
    """What a run's query needs to read the input's CSV rows by header name: the headers of the
    files it may read that are not exactly ``columns``. Those are the files examined since the
    last query that read everything (the headers of the files it committed are then forgotten,
    :func:`forget_headers`), so the plan is bounded by what is new."""
    pending = known_headers(schema_folder)
    width = max([len(columns), *(len(h) for h in pending.values())])
    return CsvPlan(width, {n: h for n, h in pending.items() if h != columns}, sorted(pending))


def forget_headers(schema_folder: str) -> None:
    """After a query that read every examined file: their headers are no longer needed."""
    if storage.exists(headers_file(schema_folder)):
        storage.delete(headers_file(schema_folder))
