"""What a person does about set-aside files: list them, and take them back in once fixed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.intake.admission import landing_intakes
from lakehouse_assets.lib.engine.intake.entries import SET_ASIDE_FOLDER
from lakehouse_assets.lib.engine.intake.ledger import SetAside
from lakehouse_assets.lib.engine.intake.set_aside import take_back
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths


@dataclass(frozen=True)
class HeldFile:
    """A file set aside: the table that reads its folder, where it is now, and the record."""

    table: str
    location: str
    record: SetAside


def held_files(paths: LakehousePaths, tables: Sequence[TableSpec]) -> list[HeldFile]:
    """Every file the tables' landing inputs hold set aside, table by table."""
    return [
        HeldFile(table.name, f"{intake.folder}/{SET_ASIDE_FOLDER}/{record.stored_as}", record)
        for table in tables
        for flow in table.flow_runs()
        for intake in landing_intakes(paths, flow)
        for record in intake.ledger.held()
    ]


def retake(
    paths: LakehousePaths, table: TableSpec, names: Sequence[str] | None, log: Callable[[str], None]
) -> list[str]:
    """Move the table's set-aside files ``names`` (None: every one) back into their landing
    folders, where the next run reads them (and sets them aside again if they still cannot be
    taken in); their names in the landing folder.

    :raises LakehouseError: a name is not set aside for this table.
    """
    moved: list[str] = []
    wanted = set(names) if names else None
    for flow in table.flow_runs():
        for intake in landing_intakes(paths, flow):
            mine = [r.name for r in intake.ledger.held() if wanted is None or r.name in wanted or r.stored_as in wanted]
            if mine:
                moved += take_back(intake.folder, intake.ledger, [intake.source.glob], mine, log)
                wanted = None if wanted is None else wanted - set(mine)
    if wanted:
        raise LakehouseError(f"{table.name} holds no set-aside file named {', '.join(sorted(wanted))}")
    return moved
