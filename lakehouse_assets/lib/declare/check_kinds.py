"""The rules a check may hold: each a small record of its parameters (the keys that must be
unique, the columns that must be set...). The engine evaluates each kind with its own evaluator
(:mod:`lakehouse_assets.lib.engine.checks.check_rules`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CheckOutcome:
    """What a check found: whether it passed, and figures shown with it in the UI.

    :param passed: the check holds.
    :param metadata: name -> value (numbers, text), recorded on the asset check evaluation.
    """

    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class UniqueKeys:
    keys: tuple[str, ...]

    @property
    def check_name(self) -> str:
        """The check's name, under which its last outcome is looked up to follow on from it."""
        return f"unique_{'_'.join(self.keys)}"


@dataclass(frozen=True)
class RequiredColumns:
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Scd2History:
    keys: tuple[str, ...]
    valid_from: str
    valid_to: str
    is_current: str


@dataclass(frozen=True)
class ExpectationMet:
    expectation: str
    action: str


@dataclass(frozen=True)
class SchemaUnchanged:
    pass


@dataclass(frozen=True)
class ReconcilesWith:
    other: str
    this_sql: dict[str, str]
    other_sql: dict[str, str]
    tolerance: float

    @property
    def check_name(self) -> str:
        """The check's name, under which its last outcome is looked up to carry it over."""
        return f"reconciles_with_{self.other}"


@dataclass(frozen=True)
class NoFilesSetAside:
    # (checkpoint name, parameter) of each landing input of the table and its flows.
    intakes: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class LandedLinesConserved:
    source_file: str
    quarantine: str | None


@dataclass(frozen=True)
class QuarantineShare:
    max_share: float


@dataclass(frozen=True)
class QuarantineTraceable:
    quarantine: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class RowsSatisfy:
    condition: str
    whole_table: bool


@dataclass(frozen=True)
class UserFunction:
    # Called with the rows in scope (a DataFrame); returns a bool or a CheckOutcome.
    function: Callable[[Any], bool | CheckOutcome]
    whole_table: bool


@dataclass(frozen=True)
class CaughtUpWithLanding:
    max_behind_s: float


CheckRule = (
    UniqueKeys
    | RequiredColumns
    | Scd2History
    | ExpectationMet
    | SchemaUnchanged
    | ReconcilesWith
    | LandedLinesConserved
    | NoFilesSetAside
    | QuarantineShare
    | QuarantineTraceable
    | RowsSatisfy
    | UserFunction
    | CaughtUpWithLanding
)
