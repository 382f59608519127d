"""How wide a landed file may make an inferred schema: a CSV header of a megabyte is half a
million columns, a JSON line of as many keys the same. A file that would take the input's
schema past ``LAKEHOUSE_LANDING_MAX_COLUMNS`` columns is set aside whole; the files before it
evolve the schema as usual."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger
from lakehouse_assets.lib.engine.intake.set_aside import set_aside
from lakehouse_assets.lib.engine.state import storage

Log = Callable[[str], None]


def leaf_count(kind: DataType) -> int:
    """The columns a type amounts to: one per leaf field of its structs (arrays and maps by
    their element types)."""
    if isinstance(kind, StructType):
        return sum(leaf_count(f.dataType) for f in kind.fields) or 1
    if isinstance(kind, ArrayType):
        return leaf_count(kind.elementType)
    if isinstance(kind, MapType):
        return leaf_count(kind.keyType) + leaf_count(kind.valueType)
    return 1


def beyond_width(
    files: Sequence[str], columns_of: Callable[[str], Mapping[str, int]], known: Sequence[str], limit: int
) -> dict[str, str]:
    """The files (in order) that would take the schema past ``limit`` columns, each with the
    reason: every file whose columns, added to those of the files kept before it, are too many.

    :param files: the files' names, in the order they are examined.
    :param columns_of: a file's top-level columns, each with the columns it amounts to.
    :param known: the schema's columns so far.
    :param limit: the most columns the schema may have.
    """
    kept = {c.lower(): 1 for c in known}
    refused = {}
    for name in files:
        found = {c.lower(): n for c, n in columns_of(name).items()}
        width = sum({**kept, **found}.values())
        if width > limit:
            refused[name] = (
                f"it would make the schema {width} columns wide, over {limit} (LAKEHOUSE_LANDING_MAX_COLUMNS)"
            )
        else:
            kept.update(found)
    return refused


def set_aside_files(folder: str, ledger: IntakeLedger, reasons: Mapping[str, str], log: Log) -> None:
    """Set aside each of ``reasons``' files of ``folder`` (see :func:`set_aside`); a file whose
    schema is being inferred has not been planned by a micro-batch yet."""
    for name, reason in reasons.items():
        filesystem, inner = storage.resolve(f"{folder}/{name}")
        set_aside(folder, ledger, name, filesystem.get_file_info(inner).size or 0, reason, False, log)
