"""Parsing raw landed lines into typed columns without losing anything.

Like Auto Loader's rescued data column: a value that does not fit its declared type becomes
null in its column and is kept, with every undeclared field, in ``_rescued_data`` (a JSON object
as text). Lines that are not JSON objects are flagged for quarantine, never dropped.
"""

from __future__ import annotations

import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.sql_names import column, quote

RESCUED = "_rescued_data"
IS_JSON_OBJECT = "_is_json_object"
CORRUPT_RECORD = "_corrupt_record"
# What a CSV row of a file whose header was not read says when it stops the query.
UNEXAMINED = "a CSV file landed as this run started, after its header was read:"


BLANK = r"(?U)^\s*$"  # Unicode white space only (tabs, no-break spaces, ...), or nothing


def non_blank_lines(lines: DataFrame, column: str = "value") -> DataFrame:
    """Drop blank (empty or whitespace-only) lines: they carry nothing."""
    return lines.where(~F.col(column).rlike(BLANK))


def _rescued(fields: dict[str, str], as_map: Column, parsed: Column, undeclared: bool = True) -> Column:
    declared = F.array(*[F.lit(name) for name in fields])
    typed = [name for name, kind in fields.items() if kind != "string"]

    def keep(key: Column, value: Column) -> Column:
        condition = ~F.array_contains(declared, key) if undeclared else F.lit(False)
        for name in typed:
            condition = condition | (
                (key == F.lit(name)) & parsed[name].isNull() & ~F.call_function("is_variant_null", value)
            )
        return condition

    rescued = F.map_filter(as_map, keep)
    return F.when(F.size(rescued) > 0, F.to_json(rescued))


def parse_json_lines(
    lines: DataFrame, fields: dict[str, str], column: str = "value", rescue_undeclared: bool = True
) -> DataFrame:
    """Parse one JSON object per line into the declared ``fields`` (name -> Spark SQL type).

    Adds the declared columns, ``_rescued_data`` and ``_is_json_object`` (False for truncated
    lines, garbage, arrays and scalars); other columns of ``lines`` are kept.

    :param lines: the frame holding the lines.
    :param fields: column name -> Spark SQL type, in order.
    :param column: the column holding the lines.
    :param rescue_undeclared: keep fields not in ``fields`` in ``_rescued_data`` (False: only
        values that do not fit their declared type are kept there).
    """
    schema = ", ".join(f"{quote(name)} {kind}" for name, kind in fields.items())
    as_map = F.from_json(F.col(column), "map<string,variant>")
    parsed = F.from_json(F.col(column), schema)
    staged = lines.select("*", as_map.alias("__lh_map"), parsed.alias("__lh_parsed"))
    return staged.select(
        *lines.columns,
        *[F.col("__lh_parsed")[name].alias(name) for name in fields],
        _rescued(fields, F.col("__lh_map"), F.col("__lh_parsed"), rescue_undeclared).alias(RESCUED),
        F.col("__lh_map").isNotNull().alias(IS_JSON_OBJECT),
    )


def parse_landed_json(lines: DataFrame, fields: dict[str, str], rescue_undeclared: bool = True) -> DataFrame:
    """Landed lines (column ``value``) as rows of ``fields`` plus ``_rescued_data``: what a
    ``landing(format="json")`` input reads. Blank lines carry nothing and go; a line that is not
    a JSON object is kept whole in ``_rescued_data`` as ``{"_corrupt_record": line}``.

    :param lines: landed lines with ``value`` and any further columns (file, ingestion time).
    :param fields: column name -> Spark SQL type, in order.
    :param rescue_undeclared: as in :func:`parse_json_lines`.
    """
    line = "__lh_line"  # a field may itself be called value
    staged = non_blank_lines(lines).withColumnRenamed("value", line)
    parsed = parse_json_lines(staged, fields, column=line, rescue_undeclared=rescue_undeclared)
    corrupt = F.to_json(F.create_map(F.lit(CORRUPT_RECORD), F.col(line)))
    rescued = F.when(F.col(IS_JSON_OBJECT), F.col(RESCUED)).otherwise(corrupt).alias(RESCUED)
    others = [column(c) for c in lines.columns if c != "value"]
    return parsed.select(*[column(name) for name in fields], rescued, *others)


def csv_positions(width: int) -> list[str]:
    """The names a landed CSV row's values are read into, by position: ``_c0`` .. ``_c<width-1>``."""
    return [f"_c{i}" for i in range(width)]


def _padded(names: list[str], width: int) -> list[str]:
    """``names`` named on to ``width`` positions: a value past the header's end is kept under
    ``_c<i>`` (the name Spark gives an unnamed column)."""
    taken = set(names)
    return names + [f"_c{i}" if f"_c{i}" not in taken else f"_c{i}_extra" for i in range(len(names), width)]


def _typed_value(raw: Column, kind: str, formats: dict[str, str]) -> Column:
    """A CSV value as ``kind``: null when it does not fit. Dates and timestamps follow the
    reader's ``dateFormat`` and ``timestampFormat`` when given, as Spark's CSV reader does."""
    if kind == "string":
        return raw
    if kind == "date" and "date" in formats:
        return F.try_to_timestamp(raw, F.lit(formats["date"])).cast("date")
    if kind.startswith("timestamp") and "timestamp" in formats:
        return F.try_to_timestamp(raw, F.lit(formats["timestamp"])).cast(kind)
    return raw.try_cast(kind)


def parse_csv_rows(
    rows: DataFrame,
    fields: dict[str, str],
    headers: dict[str, list[str]],
    expected_files: list[str],
    rescue_undeclared: bool = True,
    file_column: str = "_lh_file",
    formats: dict[str, str] | None = None,
) -> DataFrame:
    """CSV rows read by position (string columns ``_c0`` ..., see :func:`csv_positions`) as rows
    of ``fields``, each value taken by its file's header name: files may order their columns
    differently, lack some (null) or bring others (``_rescued_data``, unless not
    ``rescue_undeclared``; so do values past the end of a file's header, as ``_c<i>``). A value
    that does not fit its column's type is null there and kept as text in ``_rescued_data``. A
    row of a file that is not in ``expected_files`` stops the query (its header is unknown),
    naming the file.

    :param rows: positional string columns, ``file_column`` and any further columns (kept).
    :param fields: column name -> Spark SQL type, in order.
    :param headers: the header of each expected file whose header is not exactly the names of
        ``fields`` in order (those are read by position).
    :param expected_files: the base names of the files the rows may come from.
    :param rescue_undeclared: as in :func:`parse_json_lines`.
    :param file_column: the column holding each row's file's base name.
    :param formats: ``{"date": ..., "timestamp": ...}`` patterns of the reader's options.
    """
    width = len([c for c in rows.columns if re.fullmatch(r"_c\d+", c)])
    file = F.col(file_column)
    names: Column = F.array(*[F.lit(n) for n in _padded(list(fields), width)])
    for name, header in headers.items():
        names = F.when(file == F.lit(name), F.array(*[F.lit(h) for h in _padded(header, width)])).otherwise(names)
    values = F.array(*[F.col(c) for c in csv_positions(width)])
    staged = rows.where(
        F.when(file.isin(expected_files), F.lit(True)).otherwise(
            F.raise_error(F.concat(F.lit(f"LakehouseError: {UNEXAMINED} "), file))
        )
    ).select("*", F.map_from_arrays(names, values).alias("__lh_map"))
    by_name = F.col("__lh_map")
    typed = {name: _typed_value(by_name.getItem(name), kind, formats or {}) for name, kind in fields.items()}
    declared = F.array(*[F.lit(n) for n in fields])

    def keep(key: Column, value: Column) -> Column:
        condition = ~F.array_contains(declared, key) if rescue_undeclared else F.lit(False)
        for name, kind in fields.items():
            if kind != "string":
                condition = condition | ((key == F.lit(name)) & typed[name].isNull())
        return value.isNotNull() & condition

    rescued = F.map_filter(by_name, keep)
    others = [column(c) for c in rows.columns if c != file_column and not re.fullmatch(r"_c\d+", c)]
    return staged.select(
        *[typed[name].alias(name) for name in fields],
        F.when(F.size(rescued) > 0, F.to_json(rescued)).alias(RESCUED),
        *others,
    )
