"""Schema evolution as a pure function: from the schema an input has, what it declares, its type
hints and the fields its new files hold, the versions to record next (Auto Loader's modes:
``addNewColumns``, ``rescue``, ``failOnNewColumns``, ``none``). No file is read or written here;
:mod:`~lakehouse_assets.lib.engine.schema.landing_schema` reads the fields and records the
versions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lakehouse_assets.lib.errors import LakehouseError

Columns = dict[str, str]
# The file each of the given columns was first found in (asked only for columns it reports).
FirstIn = Callable[[list[str]], dict[str, str]]
# The modes under which landed files' new fields are looked for: to add them, or to refuse them.
LOOKS_FOR_NEW_FIELDS = ("addNewColumns", "failOnNewColumns")


@dataclass(frozen=True)
class SchemaStep:
    """One version to record: the whole schema after it, what it added, where those columns
    were first found, and the sentences that say so."""

    columns: Columns
    added: Columns
    first_files: dict[str, str]
    says: tuple[str, ...] = ()


def new_columns(columns: Columns, known: Columns) -> Columns:
    """Columns of ``columns`` that ``known`` lacks (case-insensitively, as Spark resolves them).

    :param columns: candidate columns.
    :param known: the schema's columns.
    """
    lower = {k.lower() for k in known}
    return {c: t for c, t in columns.items() if c.lower() not in lower}


def declared_steps(known: Columns | None, declared: Columns) -> list[SchemaStep]:
    """The versions ``schema=`` makes before any file is looked at: the declared schema as the
    first version, then columns the user has since added to it.

    :param known: the recorded schema (None: none yet).
    :param declared: the columns of ``schema=`` (empty: none given).
    """
    steps: list[SchemaStep] = []
    if known is None and declared:
        known = declared
        steps.append(SchemaStep(known, {}, {}))
    missing = new_columns(declared, known or {})
    if missing and known is not None:
        steps.append(
            SchemaStep(
                {**known, **missing},
                missing,
                {},
                tuple(f"added column {c} {t} (now in schema=)" for c, t in missing.items()),
            )
        )
    return steps


def typed(found: Columns, hints: Columns, infer_types: bool) -> Columns:
    """The found fields' types as the input reads them: hints over inferred types, and top-level
    strings when types are not inferred (``inferColumnTypes=false``).

    :param found: the fields files hold, with their inferred types.
    :param hints: ``schema_hints``.
    :param infer_types: the input's ``infer_column_types``.
    """
    if not infer_types:
        found = {c: t if t.startswith(("struct<", "array<")) else "string" for c, t in found.items()}
    return {c: hints.get(c, t) for c, t in found.items()}


def next_schema(
    known: Columns | None,
    hints: Columns,
    found: Columns,
    mode: str,
    first_in: FirstIn,
    *,
    table: str,
    where: str,
) -> list[SchemaStep]:
    """The versions to record after comparing the files' fields with the schema.

    :param known: the schema after :func:`declared_steps` (None: nothing recorded or declared).
    :param hints: ``schema_hints`` (a hinted column absent from the files is added too).
    :param found: the new files' fields, typed (:func:`typed`).
    :param mode: the input's evolution mode.
    :param first_in: where columns were first found.
    :param table: the table, for messages.
    :param where: the folder, for messages.
    :raises LakehouseError: no field to infer a first schema from; ``failOnNewColumns`` met new fields.
    """
    steps: list[SchemaStep] = []
    if known is None:
        known = {**found, **new_columns(hints, found)}
        if not known:
            raise LakehouseError(
                f"{table}: {where} holds no field to infer a schema from; land a file or give landing(..., schema=...)"
            )
        inferred = f"inferred the schema of {where}: " + ", ".join(f"{c} {t}" for c, t in known.items())
        steps.append(SchemaStep(known, {}, first_in(list(found)), (inferred,)))
    new = new_columns(found, known) if mode in LOOKS_FOR_NEW_FIELDS else {}
    if not new:
        return steps
    found_in = first_in(list(new))
    if mode == "failOnNewColumns":
        raise LakehouseError(
            f"{table}: {', '.join(sorted({found_in[c] for c in new}))} in {where} "
            f"brings new field(s) {', '.join(new)}, which schema_evolution='failOnNewColumns' refuses; "
            "nothing was written. Add them to landing(..., schema=...) or change schema_evolution, then run again."
        )
    says = tuple(f"added column {c} {t} (first in {found_in[c]})" for c, t in new.items())
    return [*steps, SchemaStep({**known, **new}, new, found_in, says)]


def last_columns(known: Columns | None, steps: Sequence[SchemaStep]) -> Columns | None:
    """The schema after ``steps``."""
    return steps[-1].columns if steps else known
