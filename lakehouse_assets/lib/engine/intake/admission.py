"""Before a query reads a landing folder: what is new there since the intake's cursor, vetted
within the input's bounds; what cannot be taken in set aside; what will not be read named.

The cursor (:mod:`.cursor`) bounds the work by what is new, not by the folder's history. A
table whose checkpoint predates the intake starts its cursor from the files its query's log
already records (read once). Files a micro-batch planned but that are gone before it read them
are named in a warning (Spark's ``ignoreMissingFiles`` would skip them without a word).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from lakehouse_assets.lib.declare.inputs import LandingInput, inputs_of_kind
from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.intake.bounds import LINE_FORMATS, Limits, needs_reading, size_text, vet_stream
from lakehouse_assets.lib.engine.intake.cursor import LandedFile, LandingCursor, evaluate
from lakehouse_assets.lib.engine.intake.entries import Entry, list_entries
from lakehouse_assets.lib.engine.intake.forgetting import forget_cleaned
from lakehouse_assets.lib.engine.intake.ledger import IntakeLedger, IntakeState, intake_path
from lakehouse_assets.lib.engine.intake.retention import clean
from lakehouse_assets.lib.engine.intake.set_aside import finish_moves, set_aside
from lakehouse_assets.lib.engine.reading.landing_names import describe_not_ingested, landing_folder
from lakehouse_assets.lib.engine.reading.source_log import planned_files, seen_files_of
from lakehouse_assets.lib.engine.schema.csv_layout import has_header, read_header
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.engine.state.checkpoint import query_checkpoint
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current

Log = Callable[[str], None]


@dataclass
class Intake:
    """One landing input of a flow, as this run found it."""

    parameter: str
    source: LandingInput
    folder: str
    ledger: IntakeLedger
    state: IntakeState


def intake_folder(paths: LakehousePaths, flow: TableSpec, parameter: str) -> str:
    return intake_path(paths.checkpoint(flow.checkpoint_name), parameter)


def landing_intakes(paths: LakehousePaths, flow: TableSpec) -> Iterator[Intake]:
    """Each landing input of ``flow`` with its ledger (loaded, nothing vetted yet)."""
    for parameter, source in inputs_of_kind(flow.inputs, LandingInput).items():
        ledger = IntakeLedger(intake_folder(paths, flow, parameter))
        yield Intake(parameter, source, landing_folder(paths, source), ledger, ledger.load())


def limits_for(source: LandingInput) -> Limits:
    """The input's bounds: its declared ones, else the settings' (``LAKEHOUSE_LANDING_MAX_*``)."""
    settings = current()
    return Limits(
        max_file_bytes=source.max_file_bytes or settings.landing_max_file_bytes,
        max_line_bytes=source.max_line_bytes or settings.landing_max_line_bytes,
        max_columns=settings.landing_max_columns,
        line_format=source.format in LINE_FORMATS,
    )


def vet(folder: str, entry: Entry, limits: Limits, source: LandingInput) -> str | None:
    """Why the landed file ``entry`` cannot be taken in, or None; reads it only when its size
    cannot tell (a compressed file, or one larger than a line may be), and a CSV file's header."""
    if entry.problem:
        return entry.problem
    if entry.size > limits.max_file_bytes:
        return f"it is {size_text(entry.size)}, over {size_text(limits.max_file_bytes)} (max_file_bytes)"
    path = f"{folder}/{entry.name}"
    try:
        if needs_reading(entry.name, entry.size, limits):
            filesystem, inner = storage.resolve(path)
            with filesystem.open_input_stream(inner, compression=None, buffer_size=1 << 20) as raw:
                found = vet_stream(entry.name, raw, limits)
            if found:
                return found
        if source.format == "csv" and has_header(source.options):
            width = len(read_header(path, source.options))
            if width > limits.max_columns:
                return f"its header names {width} columns, over {limits.max_columns} (LAKEHOUSE_LANDING_MAX_COLUMNS)"
    except FileNotFoundError:
        return None  # gone since the listing: the query will not see it either
    except (OSError, LakehouseError) as error:
        return f"it cannot be read ({error})"
    return None


def _planned_before(paths: LakehousePaths, flow: TableSpec, intake: Intake) -> set[str]:
    """The names an existing checkpoint's query has already planned (read once, when the
    intake first sees a table whose checkpoint predates it); empty for a new checkpoint."""
    return seen_files_of(query_checkpoint(paths, flow), intake.folder) or set()


def _new_entries(
    paths: LakehousePaths, flow: TableSpec, intake: Intake, candidates: dict[str, Entry], grace_ns: int
) -> tuple[list[str], LandingCursor]:
    """The candidates not vetted yet, and the cursor once they are."""
    files = [LandedFile(e.name, e.arrived_ns, e.size) for e in candidates.values()]
    cursor = intake.state.cursor
    if cursor is None:
        known = _planned_before(paths, flow, intake)
        return [n for n in candidates if n not in known], evaluate(files, LandingCursor(), grace_ns).next_cursor
    evaluation = evaluate(files, cursor, grace_ns)
    if evaluation.unidentified > 0:  # arrived "before" the window (a clock set back): look at all
        return list(candidates), evaluation.next_cursor
    return [f.name for f in evaluation.new], evaluation.next_cursor


def admit_input(paths: LakehousePaths, flow: TableSpec, intake: Intake, warnings: list[str], log: Log) -> list[str]:
    """Clean what the last query committed (:mod:`.retention`), vet the input's new entries and
    set aside those that cannot be taken in; the names set aside."""
    finish_moves(intake.folder, intake.ledger)
    storage.make_dirs(intake.folder)
    settings, state, source = current(), intake.state, intake.source
    grace_ns = int(settings.sensor_grace_s * 1e9)
    was_drained = state.cursor is not None and state.drained == state.cursor.dump()
    entries = list_entries(intake.folder, [source.glob], links_inside=settings.landing_links == "inside")
    skipped = sorted(e.name + ("/" if e.kind == "folder" else "") for e in entries if e.kind in ("folder", "unmatched"))
    if skipped:
        warnings.append(f"{flow.name}: {describe_not_ingested(intake.folder, skipped, [source.glob])}")
    planned = set(planned_files(query_checkpoint(paths, flow), intake.folder) or [])
    cleaned = clean(flow.name, paths, source, intake.folder, intake.ledger, state, planned, log)
    if cleaned and state.cursor is not None:  # files the cursor counted that have left the folder
        state.cursor = replace(state.cursor, n=max(0, state.cursor.n - len(cleaned)))
    candidates = {e.name: e for e in entries if e.kind in ("file", "refused") and e.name not in cleaned}
    if source.clean_source != "off":  # Spark's log forgets what left the folder (:mod:`.forgetting`)
        forgotten = forget_cleaned(query_checkpoint(paths, flow), intake.folder, {e.name for e in entries} - cleaned)
        if forgotten:
            log(f"{source.described}: Spark's file-source log forgets {len(forgotten)} cleaned file(s)")
    new, cursor = _new_entries(paths, flow, intake, candidates, grace_ns)
    limits = limits_for(source)
    aside = []
    for name in sorted(new):
        reason = vet(intake.folder, candidates[name], limits, source)
        if reason:
            size = candidates[name].size
            set_aside(intake.folder, intake.ledger, name, size, reason, name in planned, warnings.append, flow.name)
            aside.append(name)
    held = {r.name for r in intake.ledger.records()}
    for name in sorted(planned - set(candidates) - held):
        warnings.append(
            f"{flow.name}: landed file {name} in {source.described} was planned into a micro-batch and "
            "removed before it was read: its rows are not in the table"
        )
    admitted = [n for n in new if n not in aside]
    state.cursor = replace(cursor, n=max(0, cursor.n - len(aside)))  # set-aside files left the folder
    if was_drained and not admitted:  # cleaned or set aside, nothing new to read: still drained
        state.drained = state.cursor.dump()
    if source.clean_source != "off":  # committed once a query has read everything (finish)
        state.admitted = sorted(set(state.admitted) | set(admitted))
    if source.infers_schema:  # the files schema evolution has yet to look at
        state.unexamined = sorted(set(state.unexamined) | set(admitted))
    intake.ledger.save(state)
    return aside
