"""The intake's part in a run of one flow: before its query (vet what is new, set aside what
cannot be taken in, say whether anything is new), after a query that read everything (write the
set-aside rows, remember the cursor as drained), and after a query that failed reading one
landed file (count it; set it aside once it failed ``LAKEHOUSE_POISON_ATTEMPTS`` times)."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.intake.admission import Intake, admit_input, landing_intakes
from lakehouse_assets.lib.engine.intake.set_aside import record_in_quarantine, set_aside, take_back
from lakehouse_assets.lib.engine.report import RunReport
from lakehouse_assets.lib.engine.schema.csv_layout import forget_headers
from lakehouse_assets.lib.engine.schema.landing_schema import schema_folder
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.engine.state.checkpoint import app_id
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current

Log = Callable[[str], None]


def admit(spark: SparkSession, paths: LakehousePaths, flow: TableSpec, report: RunReport, log: Log) -> list[Intake]:
    """Vet every landing input of ``flow`` (see :func:`admit_input`); set-aside files go into the
    report and, where the quarantine table exists, into it."""
    intakes = list(landing_intakes(paths, flow))
    for intake in intakes:
        report.files_set_aside += admit_input(paths, flow, intake, report.warnings, log)
        record_in_quarantine(spark, paths, flow, intake.folder, intake.ledger, app_id(paths, flow))
    return intakes


def drained(intakes: list[Intake]) -> bool:
    """Nothing is new in any of the inputs since the last query that read everything."""
    return all(i.state.cursor is not None and i.state.drained == i.state.cursor.dump() for i in intakes)


def finish(spark: SparkSession, paths: LakehousePaths, flow: TableSpec, intakes: list[Intake]) -> None:
    """After a query that read everything listed when it started: the set-aside rows the
    quarantine could not take before it existed; the cursor remembered as drained; the files
    admitted since the last such query now committed (retention cleans them at the next run);
    a CSV input's headers of the files read forgotten."""
    for intake in intakes:
        record_in_quarantine(spark, paths, flow, intake.folder, intake.ledger, app_id(paths, flow))
        if intake.source.format == "csv" and intake.source.infers_schema:
            forget_headers(schema_folder(paths, flow, intake.parameter))
        state = intake.ledger.load()  # schema evolution may have changed it since the intake's
        state.drained = intake.state.cursor.dump() if intake.state.cursor else ""
        state.attempts = {}
        state.committed, state.admitted = sorted(set(state.committed) | set(state.admitted)), []
        intake.ledger.save(state)
        intake.state = state


def note_read_failure(paths: LakehousePaths, flow: TableSpec, file: str, message: str, warn: Log) -> bool:
    """Count a failed read of the landed ``file``; set it aside once it has failed
    ``LAKEHOUSE_POISON_ATTEMPTS`` times in a row (saying so to ``warn``). False when ``file`` is not in one of the flow's
    landing folders (the failure is not the intake's to handle)."""
    folder, _, name = file.rstrip("/").rpartition("/")
    for intake in landing_intakes(paths, flow):
        if not _same_folder(folder, intake.folder):
            continue
        attempts = intake.state.attempts.get(name, 0) + 1
        intake.state.attempts[name] = attempts
        if attempts >= current().poison_attempts:
            reason = f"reading it failed {attempts} times in a row ({message.split(': ', 1)[-1][:300]})"
            filesystem, inner = storage.resolve(f"{intake.folder}/{name}")
            size = filesystem.get_file_info(inner).size or 0
            set_aside(intake.folder, intake.ledger, name, size, reason, True, warn, flow.name)
            intake.state.attempts.pop(name)
        intake.ledger.save(intake.state)
        return True
    return False


def _same_folder(a: str, b: str) -> bool:
    def bare(path: str) -> str:
        return path.split("://", 1)[-1].removeprefix("file:").lstrip("/").rstrip("/")

    return bare(a) == bare(b)


def take_all_back(paths: LakehousePaths, table: TableSpec, log: Log) -> None:
    """Before a full refresh: every file the table's flows set aside goes back into its landing
    folder (under a new name, so a run killed before the checkpoint is reset still reads it; the
    rebuilt table reads it, or sets it aside again); and a word on inputs whose files were cleaned
    once committed (the rebuild reads what is still landed)."""
    for flow in table.flow_runs():
        for intake in landing_intakes(paths, flow):
            if intake.ledger.held():
                take_back(intake.folder, intake.ledger, [intake.source.glob], None, log)
            if intake.source.clean_source != "off":
                log(
                    f"{flow.name}: the full refresh reads the files still in {intake.source.described}; those "
                    f"{'archived' if intake.source.clean_source == 'archive' else 'deleted'} once committed are not "
                    "read again (move archived files back into the folder first to include them)"
                )
