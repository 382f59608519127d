"""Asset checks declared next to a table, evaluated in the same step after each run.

Expectations decide what happens to each row inside the stream; checks decide whether the
table as a whole can be trusted. ``ERROR`` checks are blocking: when one fails, downstream
assets of the run are skipped and ``dagster asset materialize`` exits non-zero.

A check is a declaration: its name, what it promises, and a *rule* holding the rule's
parameters (the keys that must be unique, the columns that must be set...). Nothing here runs
Spark; the engine evaluates each rule (``lakehouse_assets.lib.engine.checks.check_rules``).

Most checks look only at what changed since the last checked materialization (Delta's change
data feed between the two versions, which also catches commits made outside the pipeline);
those that need the whole table say ``scope: full table`` in their metadata. A table still at
the version of its last materialization has no changes: its changes-scoped checks pass without
a Spark job; a full-table check that last passed at the current versions of every table it reads
passes again without one (``reconciles_with``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from lakehouse_assets.lib.declare.check_kinds import (
    CaughtUpWithLanding,
    CheckOutcome,
    CheckRule,
    ExpectationMet,
    LandedLinesConserved,
    NoFilesSetAside,
    QuarantineShare,
    QuarantineTraceable,
    ReconcilesWith,
    RequiredColumns,
    RowsSatisfy,
    Scd2History,
    SchemaUnchanged,
    UniqueKeys,
    UserFunction,
)
from lakehouse_assets.lib.declare.ddl import duration
from lakehouse_assets.lib.errors import DeclarationError

Severity = Literal["ERROR", "WARN"]
Scope = Literal["changes", "full table"]


@dataclass(frozen=True)
class TableCheck:
    """A named check of one table: a rule the engine evaluates after the table's run.

    :param name: the asset check's name.
    :param description: what the check promises, shown in the UI.
    :param rule: what to verify, with its parameters.
    :param severity: ``ERROR`` blocks downstream assets when the check fails; ``WARN`` does not.
    :param scope: ``changes`` (the rows changed since the last check) or ``full table``.
    :param target: the asset the check is on: the table, or its quarantine table.
    """

    name: str
    description: str
    rule: CheckRule
    severity: Severity = "ERROR"
    scope: Scope = "changes"
    target: Literal["table", "quarantine"] = "table"


def unique(*keys: str, severity: Severity = "ERROR") -> TableCheck:
    """No two rows share ``keys`` (checked for the keys that changed; when the table's own writer
    MERGEs on exactly these keys, for the keys it inserted, with a whole-table check now and then)."""
    rule = UniqueKeys(keys)
    return TableCheck(rule.check_name, f"One row per ({', '.join(keys)}).", rule, severity)


def not_null(*columns: str, severity: Severity = "ERROR") -> TableCheck:
    """Required columns hold no nulls (in the rows that changed)."""
    return TableCheck(
        "required_columns_not_null", f"No nulls in {', '.join(columns)}.", RequiredColumns(columns), severity
    )


def scd2_valid(
    *keys: str, valid_from: str = "valid_from", valid_to: str = "valid_to", is_current: str = "is_current"
) -> TableCheck:
    """SCD2 history is consistent for the keys that changed: at most one current version,
    current means open-ended, and no two versions of a key overlap in time."""
    return TableCheck(
        "scd2_history_valid",
        "One current version per key and no overlapping validity.",
        Scd2History(keys, valid_from, valid_to, is_current),
    )


def expectation_met(name: str, condition: str, action: str) -> TableCheck:
    """The run's rows that failed the expectation ``name``: none, or a warning with the count
    (what happened to them is the expectation's action: kept, dropped, quarantined)."""
    check_name = "expect_" + "".join(c if c.isalnum() else "_" for c in name)
    description = f"Rows meet {condition} (expectation {name}, action: {action})."
    return TableCheck(check_name, description, ExpectationMet(name, action), "WARN")


def schema_unchanged(severity: Severity = "ERROR") -> TableCheck:
    """No column removed or retyped since the last materialization (added columns are fine)."""
    return TableCheck(
        "schema_unchanged", "No column removed or retyped since the last run.", SchemaUnchanged(), severity
    )


def reconciles_with(
    other: str, this_sql: dict[str, str], other_sql: dict[str, str], tolerance: float = 1e-6
) -> TableCheck:
    """Aggregates of this table equal aggregates of ``other``: carried over when it last passed
    at the versions both tables are still at; else followed through both change data feeds
    when every aggregate is additive (``sum``, ``count``, ``count_if``); else full scans of both.

    :param other: the table to reconcile with.
    :param this_sql: name to aggregate SQL expression over this table.
    :param other_sql: the same names to aggregate SQL expressions over ``other``.
    :param tolerance: relative and absolute tolerance of each comparison.
    """
    rule = ReconcilesWith(other, dict(this_sql), dict(other_sql), tolerance)
    return TableCheck(rule.check_name, f"Totals equal those of {other}.", rule, "ERROR", "full table")


def landed_lines_conserved(source_file: str = "_source_file", quarantine: str | None = None) -> TableCheck:
    """Every non-blank line of the files this run ingested is in the table or its quarantine."""
    return TableCheck(
        "landed_lines_conserved",
        "Non-blank lines of each ingested file = its rows here + in the quarantine.",
        LandedLinesConserved(source_file, quarantine),
    )


def no_files_set_aside(intakes: list[tuple[str, str]]) -> TableCheck:
    """Warn while a landed file of the table's landing inputs is set aside (too large, a link,
    unreadable...): it waits for a person to fix it and take it back in.

    :param intakes: (checkpoint name, parameter) of each landing input.
    """
    description = "No landed file is set aside (each one waits to be fixed and taken back in)."
    return TableCheck("no_files_set_aside", description, NoFilesSetAside(tuple(intakes)), "WARN", "full table")


def quarantine_rate(max_share: float = 0.1) -> TableCheck:
    """On the quarantine table: warn when the run sent more than ``max_share`` of the rows its
    expectations checked to quarantine (a degrading feed shows before anyone reads the table)."""
    description = f"At most {max_share:.0%} of a run's rows quarantined."
    return TableCheck("quarantine_rate", description, QuarantineShare(max_share), "WARN", target="quarantine")


def caught_up_with_landing(max_behind: str = "30 minutes", severity: Severity = "WARN") -> TableCheck:
    """The oldest landed file whose rows the table does not hold yet (in any landing folder that
    feeds it, through the tables it streams from) waited at most ``max_behind`` (e.g.
    ``"15 minutes"``). Evaluated after each run and, without a run, by the freshness sensor.
    Unlike a freshness policy (time since the last materialization), it says whether what
    landed is in the table."""
    seconds = duration(max_behind).total_seconds()
    description = f"Holds every landed file within {max_behind} of its arrival."
    return TableCheck("caught_up_with_landing", description, CaughtUpWithLanding(seconds), severity, "full table")


def quarantine_traceable(quarantine: str, columns: list[str]) -> TableCheck:
    """On the quarantine table: every row that arrived carries ``columns`` (its reason, its raw
    record, where it came from), so each can be understood and replayed."""
    description = f"Every quarantined row carries {', '.join(columns) or 'its columns'}."
    rule = QuarantineTraceable(quarantine, tuple(columns))
    return TableCheck("quarantine_rows_traceable", description, rule, "ERROR", target="quarantine")


def rows_satisfy(name: str, condition: str, *, severity: Severity = "ERROR", scope: Scope = "changes") -> TableCheck:
    """Every row satisfies a SQL condition, e.g. ``"kwh >= 0"``; a row where it is null fails.
    Unlike an expectation, which acts on each row as it is written, this judges the table.

    :param name: the asset check's name.
    :param condition: a SQL boolean expression over the table's columns.
    :param severity: ``ERROR`` blocks downstream assets when it fails; ``WARN`` does not.
    :param scope: ``changes`` (rows changed since the last check) or ``full table``.
    """
    rule = RowsSatisfy(condition, whole_table=scope == "full table")
    return TableCheck(name, f"Every row satisfies {condition}.", rule, severity, scope)


def custom_check(
    name: str,
    function: Callable[[Any], bool | CheckOutcome],
    *,
    description: str,
    severity: Severity = "ERROR",
    scope: Scope = "changes",
) -> TableCheck:
    """A check of your own: ``function`` gets the rows in scope as a DataFrame and returns
    whether they pass, or a :class:`CheckOutcome` with figures to show. An exception it raises
    fails the check with the error's first line.

    :param name: the asset check's name.
    :param function: ``rows -> bool | CheckOutcome``; not called when the table did not change
        and ``scope`` is ``changes``.
    :param description: what the check promises, shown in the UI.
    :param severity: ``ERROR`` blocks downstream assets when it fails; ``WARN`` does not.
    :param scope: ``changes`` (rows changed since the last check) or ``full table``.
    """
    if not callable(function):
        raise DeclarationError(f"custom_check({name!r}): function must be callable, not {type(function).__name__}")
    rule = UserFunction(function, whole_table=scope == "full table")
    return TableCheck(name, description, rule, severity, scope)


# Checks every table gets (a declared check of the same kind and name replaces its default).
DEFAULT_CHECK_NAMES = ("schema_unchanged", "quarantine_rate", "quarantine_rows_traceable", "no_files_set_aside")


def declared_checks(table: str, checks: list[TableCheck] | None) -> list[TableCheck]:
    """A table's checks, refused at declaration when Dagster could not name them apart: a name
    that is not letters, digits and underscores, one declared twice, or a check of your own
    named like a default one."""
    names: set[str] = set()
    for check in checks or []:
        if not re.fullmatch(r"[A-Za-z0-9_]+", check.name):
            raise DeclarationError(f"{table}: check name {check.name!r} may hold only letters, digits and _")
        if check.name in names:
            raise DeclarationError(f"{table}: two checks are named {check.name!r}; give one another name")
        if isinstance(check.rule, RowsSatisfy | UserFunction) and check.name in DEFAULT_CHECK_NAMES:
            raise DeclarationError(f"{table}: {check.name!r} is the name of a check every table gets; pick another")
        names.add(check.name)
    return list(checks or [])
