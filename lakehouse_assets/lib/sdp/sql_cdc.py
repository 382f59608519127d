"""Lakeflow's SQL Auto CDC statements in pipeline files, as written there:

    CREATE FLOW customers_flow AS AUTO CDC INTO customers
      FROM STREAM(customers_cdc) KEYS (id)
      APPLY AS DELETE WHEN operation = 'DELETE'
      SEQUENCE BY sequence_num
      COLUMNS * EXCEPT (operation, sequence_num)
      STORED AS SCD TYPE 2
      TRACK HISTORY ON * EXCEPT (city);
    APPLY CHANGES INTO customers FROM STREAM(customers_cdc) KEYS (id) SEQUENCE BY sequence_num;

Each becomes the same Auto CDC flow ``create_auto_cdc_flow`` registers (the target is declared
with ``CREATE STREAMING TABLE``). A clause this framework does not carry out stops loading with
the file, the line and what to write instead.
"""

from __future__ import annotations

import re

from pyspark.pipelines.source_code_location import SourceCodeLocation

from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.graph import CdcFlow

_NAME = r"[`\w][`\w.]*"
AUTO_CDC = re.compile(
    rf"(?:CREATE\s+FLOW\s+(?P<name>{_NAME})\s+AS\s+AUTO\s+CDC\s+(?P<once>ONCE\s+)?INTO|APPLY\s+CHANGES\s+INTO)\s+"
    rf"(?P<target>{_NAME})\s+FROM\s+(?P<source>.+?)\s+KEYS\s*\((?P<keys>[^)]*)\)(?P<rest>.*)",
    re.IGNORECASE | re.DOTALL,
)
_CLAUSE = re.compile(
    r"\b(IGNORE\s+NULL\s+UPDATES|APPLY\s+AS\s+DELETE\s+WHEN|APPLY\s+AS\s+TRUNCATE\s+WHEN|SYSTEM\s+SEQUENCE\s+BY|"
    r"SEQUENCE\s+BY|COLUMNS\s+TO\s+UPDATE|COLUMNS|STORED\s+AS|TRACK\s+HISTORY\s+ON)\b",
    re.IGNORECASE,
)
_SOURCE = re.compile(rf"STREAM\s*\(\s*(?P<a>{_NAME})\s*\)|STREAM\s+(?P<b>{_NAME})", re.IGNORECASE)
_UNSUPPORTED = {
    "IGNORE NULL UPDATES": "leave it out: updates with nulls overwrite the stored values here",
    "APPLY AS TRUNCATE WHEN": "leave it out: SCD tables are not truncated by a change here",
    "SYSTEM SEQUENCE BY": "order the changes with SEQUENCE BY alone",
    "COLUMNS TO UPDATE": "leave it out: every column is updated",
}


def _name(text: str) -> str:
    name = text.replace("`", "").strip()
    return name[5:] if name.lower().startswith("live.") else name  # Lakeflow's old LIVE. prefix


def _columns(text: str, place: str, clause: str) -> tuple[list[str] | None, list[str] | None]:
    """``(a, b)`` as (columns, None); ``* EXCEPT (a, b)`` as (None, columns)."""
    if match := re.fullmatch(r"\*\s*EXCEPT\s*\(([^)]*)\)", text, re.IGNORECASE):
        return None, [_name(c) for c in match[1].split(",") if c.strip()]
    if match := re.fullmatch(r"\(([^)]*)\)", text):
        return [_name(c) for c in match[1].split(",") if c.strip()], None
    raise DeclarationError(f"{place}: {clause} takes (col, ...) or * EXCEPT (col, ...), not {text[:60]!r}")


def auto_cdc_flow(statement: str, location: SourceCodeLocation) -> CdcFlow | None:
    """The Auto CDC flow a ``CREATE FLOW … AS AUTO CDC INTO …`` or ``APPLY CHANGES INTO …``
    statement declares; None for any other statement.

    :param statement: one statement of a SQL pipeline file, comments left out.
    :param location: where it starts, for messages.
    :raises DeclarationError: a clause that is not carried out here, or one that cannot be read.
    """
    match = AUTO_CDC.fullmatch(statement.strip())
    if match is None:
        return None
    place = f"{location.filename}:{location.line_number}"
    if match["once"]:
        raise DeclarationError(f"{place}: AUTO CDC ONCE is not supported; leave ONCE out")
    source = _SOURCE.fullmatch(match["source"].strip())
    if source is None:
        raise DeclarationError(
            f"{place}: an Auto CDC flow reads its changes as a stream: write FROM STREAM({match['source'].strip()})"
        )
    parts = _CLAUSE.split(match["rest"])
    if parts[0].strip():
        raise DeclarationError(f"{place}: cannot read {parts[0].strip()[:60]!r} after KEYS (...)")
    clauses = {" ".join(k.upper().split()): v.strip() for k, v in zip(parts[1::2], parts[2::2], strict=True)}
    for clause, instead in _UNSUPPORTED.items():
        if clause in clauses:
            raise DeclarationError(f"{place}: {clause} is not supported; {instead}")
    sequence = clauses.get("SEQUENCE BY", "")
    if not re.fullmatch(_NAME, sequence):
        raise DeclarationError(f"{place}: SEQUENCE BY names one column (got {sequence[:60]!r}); Auto CDC needs it")
    stored = " ".join(clauses.get("STORED AS", "SCD TYPE 1").upper().split())
    if stored not in ("SCD TYPE 1", "SCD TYPE 2"):
        raise DeclarationError(f"{place}: STORED AS {stored} is not supported; write SCD TYPE 1 or SCD TYPE 2")
    column_list, except_columns = (
        _columns(clauses["COLUMNS"], place, "COLUMNS") if "COLUMNS" in clauses else (None, None)
    )
    track, track_except = (None, None)
    if "TRACK HISTORY ON" in clauses:
        if stored != "SCD TYPE 2":
            raise DeclarationError(f"{place}: TRACK HISTORY ON needs STORED AS SCD TYPE 2")
        track, track_except = _columns(clauses["TRACK HISTORY ON"], place, "TRACK HISTORY ON")
    target = _name(match["target"])
    return CdcFlow(
        name=_name(match["name"]) if match["name"] else target,
        target=target,
        source=_name(source["a"] or source["b"]),
        keys=[_name(k) for k in match["keys"].split(",") if k.strip()],
        source_code_location=location,
        stored_as_scd_type=int(stored[-1]),
        sequence_by=_name(sequence),
        apply_as_deletes=clauses.get("APPLY AS DELETE WHEN") or None,
        column_list=column_list,
        except_column_list=except_columns,
        track_history_column_list=track,
        track_history_except_column_list=track_except,
    )
