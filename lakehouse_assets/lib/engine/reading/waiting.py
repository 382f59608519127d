"""How many changes of the table a flow streams from are waiting for it: read from the flow's
checkpoint (the version its next read starts at) and the Delta log's commit metrics, no Spark job.
What a sink that cannot send (no broker configured) tells the operator."""

from __future__ import annotations

import json
from dataclasses import dataclass

from lakehouse_assets.lib.declare.table import TableSpec
from lakehouse_assets.lib.engine.state import delta_log, storage
from lakehouse_assets.lib.engine.state.checkpoint import query_checkpoint
from lakehouse_assets.lib.paths import LakehousePaths

# Per operation, the row metrics of a commit that count the rows it changed (as its change
# feed has them, an update once).
_CHANGED = {
    "WRITE": ("numOutputRows",),
    "STREAMING UPDATE": ("numOutputRows",),
    "MERGE": ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"),
    "DELETE": ("numDeletedRows",),
    "UPDATE": ("numUpdatedRows",),
}


@dataclass(frozen=True)
class Waiting:
    table: str
    versions: int
    changes: int

    def described(self) -> str:
        return f"{self.changes} change(s) in {self.versions} version(s) of {self.table} wait"


def _next_version(paths: LakehousePaths, flow: TableSpec) -> int:
    """The version the flow's next read starts at (0: it never read)."""
    query = query_checkpoint(paths, flow)
    committed = [int(n) for n in storage.list_names(f"{query}/commits") if n.isdigit()]
    if not committed:
        return 0
    lines = (storage.read_text(f"{query}/offsets/{max(committed)}") or "").strip().splitlines()
    try:
        offset = json.loads(lines[-1])
    except (IndexError, ValueError):
        return 0
    # Delta's source offset: the next read starts in reservoirVersion (at its start when index is -1).
    return int(offset.get("reservoirVersion", 0)) if isinstance(offset, dict) else 0


def waiting_changes(paths: LakehousePaths, flow: TableSpec) -> Waiting | None:
    """What waits for ``flow`` in the one table it streams from (None: it streams from none, or
    from more than one)."""
    streamed = list(dict.fromkeys(flow.streamed_tables))
    if len(streamed) != 1:
        return None
    path = paths.table(streamed[0])
    latest = delta_log.delta_version(path)
    if latest is None:
        return Waiting(streamed[0], 0, 0)
    start = _next_version(paths, flow)
    changes = 0
    for version in range(start, latest + 1):
        info = delta_log.delta_commit_info(path, version) or {}
        metrics = info.get("operationMetrics") or {}
        changes += sum(int(metrics.get(name, 0) or 0) for name in _CHANGED.get(info.get("operation", ""), ()))
    return Waiting(streamed[0], max(0, latest + 1 - start), changes)
