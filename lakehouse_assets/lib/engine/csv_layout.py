"""The headers of landed CSV files, for a ``landing(format="csv")`` input whose schema is inferred
or evolves: each file's header is read once, when the file is first examined, and kept beside
the input's schema (``<checkpoint>/_schemas/<parameter>/headers.json``), so its rows are read by
column name whatever order or subset of columns the file has. Types are inferred per header
(Spark's own CSV inference), then merged.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from pyspark.sql import SparkSession

from lakehouse_assets.lib.engine import storage
from lakehouse_assets.lib.engine.delta_sql import sql_type
from lakehouse_assets.lib.engine.errors import engine_lost
from lakehouse_assets.lib.engine.idle import seen_files
from lakehouse_assets.lib.errors import LakehouseError, first_line
from lakehouse_assets.lib.settings import current

HEAD_BYTES = 1 << 20  # a header longer than this is not a header
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


def read_header(path: str, options: dict[str, str]) -> list[str]:
    """The column names of the CSV file ``path`` (``.gz`` decompressed), as Spark names them: an
    empty name is ``_c<i>``, a repeated one gets its position appended; ``_c<i>`` for every
    field when the input's files have no header."""
    filesystem, inner = storage.resolve(path)
    with filesystem.open_input_stream(inner, compression="detect") as stream:
        head = stream.read(HEAD_BYTES)
    encoding = _option(options, "encoding", "charset", default="utf-8")
    text = head.decode(encoding, errors="replace").lstrip("\ufeff")
    sep = _option(options, "sep", "delimiter", default=",")
    quote = _option(options, "quote", default='"')
    escape = _option(options, "escape", default="\\")
    if len(sep) == 1:
        dialect = {"delimiter": sep, "quotechar": quote or None, "escapechar": escape or None}
        row = next(csv.reader(io.StringIO(text), doublequote=escape == quote, **dialect), [])  # type: ignore[arg-type]
    else:
        row = text.splitlines()[0].split(sep) if text else []
    if not has_header(options):
        return [f"_c{i}" for i in range(len(row))]
    names = [n.strip() or f"_c{i}" for i, n in enumerate(row)]
    lower = [n.lower() for n in names]
    return [f"{n}{i}" if lower.count(n.lower()) > 1 else n for i, n in enumerate(names)]


def headers_file(schema_folder: str) -> str:
    return f"{schema_folder}/headers.json"


def known_headers(schema_folder: str) -> dict[str, list[str]]:
    """Each examined file's header, by base name."""
    record = json.loads(storage.read_text(headers_file(schema_folder)) or '{"headers": [], "files": {}}')
    return {name: record["headers"][i] for name, i in record["files"].items()}


def record_headers(schema_folder: str, found: dict[str, list[str]]) -> None:
    """Keep the headers of newly examined files (distinct headers stored once)."""
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
    reader_options = {k: v for k, v in options.items() if k.lower() not in OWN_OPTIONS}
    for columns, files in groups.items():
        try:
            schema = (
                spark.read.options(**reader_options)
                .option("header", has_header(options))
                .option("inferSchema", "true")
                .csv(files)
                .schema
            )
        except Exception as error:
            if engine_lost(error, current().spark_remote):
                raise
            raise LakehouseError(f"{files[0]} is not a readable CSV file ({first_line(error)[:300]})") from error
        kinds = [sql_type(f.dataType) for f in schema.fields]
        for column, kind in zip(columns, kinds + ["string"] * (len(columns) - len(kinds)), strict=False):
            known = merged.get(column)
            merged[column] = kind if known in (None, kind) else _WIDER.get(frozenset((known, kind)), "string")
    return merged


def committed_files(query_checkpoint: str) -> set[str]:
    """The files of the micro-batches the query has committed (a replayed batch reads its files
    again, so they are not among them)."""
    commits = [int(n) for n in storage.list_names(f"{query_checkpoint}/commits") if n.isdigit()]
    if not commits:
        return set()
    log = f"{query_checkpoint}/sources/0"
    done = [
        n
        for n in storage.list_names(log)
        if n.removesuffix(".compact").isdigit() and int(n.removesuffix(".compact")) <= max(commits)
    ]
    return seen_files([(n, storage.read_text(f"{log}/{n}") or "") for n in done]) or set()


def reading_plan(schema_folder: str, query_checkpoint: str, columns: list[str]) -> CsvPlan:
    """What a run's query needs to read the input's CSV rows by header name."""
    done = committed_files(query_checkpoint)
    pending = {n: h for n, h in known_headers(schema_folder).items() if n not in done}
    reordered = {n: h for n, h in pending.items() if h != columns[: len(h)]}
    width = max([len(columns), *(len(h) for h in pending.values())])
    return CsvPlan(width, reordered, sorted(pending))
