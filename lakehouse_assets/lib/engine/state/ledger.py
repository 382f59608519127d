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
    def for_run(cls, checkpoint_folder: str) -> BatchLedger:
        return cls(f"{checkpoint_folder}/run-reports/{uuid.uuid4().hex}")

    def record(self, batch_id: int, batch: RunReport) -> None:
        """Keep what micro-batch ``batch_id`` did (a replayed batch replaces its record)."""
        storage.write_text(f"{self.folder}/{batch_id:010d}.json", _to_json(batch))

    def add_up(self, report: RunReport) -> None:
        """Add every recorded micro-batch to ``report``, in batch order, and forget them."""
        for name in sorted(n for n in storage.list_names(self.folder) if n.endswith(".json") and n[0] != "."):
            text = storage.read_text(f"{self.folder}/{name}")
            if text:
                _add(report, json.loads(text))
        self.discard()

    def discard(self) -> None:
        storage.delete(self.folder)
