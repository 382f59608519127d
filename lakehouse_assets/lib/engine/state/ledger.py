"""What each micro-batch did, handed from the batch handler back to the run through storage.

A ``foreachBatch`` handler may run in another process than the run that started the query (on
a Spark Connect server, in a Python worker of the server), where the run's objects do not
exist. So every handler records its micro-batch's figures as a small JSON file under the run's
own folder beside the checkpoint, and the run adds them up when the query has ended. An
embedded session takes the same path.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import StructType

from lakehouse_assets.lib.engine.report import RunReport, WrittenSample
from lakehouse_assets.lib.engine.state import storage

RUN_FILE = "run.txt"
_SUMMED = (
    "result_rows",
    "rows_written",
    "rows_quarantined",
    "dropped_by_expectations",
    "dropped_duplicates",
    "expectation_rows",
)


def _to_json(report: RunReport) -> str:
    figures: dict[str, Any] = {name: getattr(report, name) for name in _SUMMED}
    figures["expectation_failures"] = report.expectation_failures
    figures["landed_files"] = report.landed_files
    figures["written"] = {t: {"schema": s.schema.json(), "rows": s.rows} for t, s in report.written.items()}
    return json.dumps(figures)


def _add(report: RunReport, figures: dict[str, Any]) -> None:
    for name in _SUMMED:
        setattr(report, name, getattr(report, name) + int(figures.get(name, 0)))
    for name, failed in figures.get("expectation_failures", {}).items():
        report.expectation_failures[name] = report.expectation_failures.get(name, 0) + int(failed)
    if figures.get("landed_files") is not None:
        report.landed_files = sorted({*(report.landed_files or []), *figures["landed_files"]})
    for table, sample in figures.get("written", {}).items():
        report.written[table] = WrittenSample(StructType.fromJson(json.loads(sample["schema"])), sample["rows"])


@dataclass(frozen=True)
class BatchLedger:
    """The folder where one run's micro-batches record what they did.

    :param folder: a folder of its own for this run (a URI or local path under the data root).
    """

    folder: str

    @classmethod
    def for_run(cls, checkpoint_folder: str, run_id: str = "") -> BatchLedger:
        """A new folder for one run's records.

        :param run_id: the run (kept beside its records, to name it if it is killed).
        """
        ledger = cls(f"{checkpoint_folder}/run-reports/{uuid.uuid4().hex}")
        storage.write_text(f"{ledger.folder}/{RUN_FILE}", run_id)
        return ledger

    @staticmethod
    def killed_runs(checkpoint_folder: str, committed: int | None) -> list[tuple[str, RunReport]]:
        """The folders of runs that were killed (call while holding the table's writer lock,
        before this run records anything): per run, the figures of its micro-batches up to batch
        ``committed`` (the checkpoint's last commit; None: none). The folders are not forgotten
        here: :meth:`forget_killed` does that once the figures are kept elsewhere.

        :param checkpoint_folder: the flow's checkpoint folder.
        :param committed: the highest micro-batch id with a commit.
        """
        found = []
        root = f"{checkpoint_folder}/run-reports"
        for folder in sorted(storage.list_names(root)):
            ledger = BatchLedger(f"{root}/{folder}")
            run_id = (storage.read_text(f"{ledger.folder}/{RUN_FILE}") or "").strip()
            report = RunReport("")
            for batch_id, figures in ledger._records():
                if committed is not None and batch_id <= committed:
                    _add(report, figures)
                    report.batches += 1
            found.append((run_id, report))
        return found

    @staticmethod
    def forget_killed(checkpoint_folder: str) -> None:
        storage.delete(f"{checkpoint_folder}/run-reports")

    def _records(self) -> list[tuple[int, dict[str, Any]]]:
        records = []
        for name in sorted(n for n in storage.list_names(self.folder) if n.endswith(".json") and n[0] != "."):
            text = storage.read_text(f"{self.folder}/{name}")
            if text:
                records.append((int(name.removesuffix(".json")), json.loads(text)))
        return records

    def record(self, batch_id: int, batch: RunReport) -> None:
        """Keep what micro-batch ``batch_id`` did (a replayed batch replaces its record)."""
        storage.write_text(f"{self.folder}/{batch_id:010d}.json", _to_json(batch))

    def add_up(self, report: RunReport) -> None:
        """Add every recorded micro-batch to ``report``, in batch order, and forget them."""
        for _, figures in self._records():
            _add(report, figures)
        self.discard()

    def discard(self) -> None:
        storage.delete(self.folder)
