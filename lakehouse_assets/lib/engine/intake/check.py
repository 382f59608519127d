"""The ``no_files_set_aside`` check: warns while any landed file of the table's inputs waits,
set aside, for a person to fix it and take it back in."""

from __future__ import annotations

from lakehouse_assets.lib.declare.checks import CheckOutcome, NoFilesSetAside
from lakehouse_assets.lib.engine.checks.check_context import CheckContext
from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger, intake_path

SHOWN = 5


def evaluate(rule: NoFilesSetAside, ctx: CheckContext) -> CheckOutcome:
    held = [
        record
        for checkpoint, parameter in rule.intakes
        for record in IntakeLedger(intake_path(ctx.paths.checkpoint(checkpoint), parameter)).held()
    ]
    shown = "; ".join(f"{r.name}: {r.reason}" for r in held[:SHOWN]) + (
        f"; and {len(held) - SHOWN} more" if len(held) > SHOWN else ""
    )
    return CheckOutcome(
        not held,
        {
            "files_set_aside": len(held),
            "files": shown or "none",
            "take_back_in": f"python -m lakehouse_assets.set_aside retake {ctx.table}"
            if held
            else "nothing to take back",
        },
    )
