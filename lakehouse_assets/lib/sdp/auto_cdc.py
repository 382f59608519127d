"""An Auto CDC flow as the framework's SCD sink: the columns are settled when the changes'
schema is known (at run time), as ``create_auto_cdc_flow`` leaves them to the source."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.cdc import VALID_FROM, scd1_current, scd2_history
from lakehouse_assets.lib.declare.sinks import RecomputeSink
from lakehouse_assets.lib.sdp.graph import CdcFlow


@dataclass(frozen=True)
class CdcRows:
    """The stored rows of an Auto CDC target, from every change of the keys concerned."""

    flow: CdcFlow

    def columns(self, changes: DataFrame) -> list[str]:
        flow = self.flow
        left_out = {*flow.keys, flow.sequence_by, *(flow.except_column_list or [])}
        chosen = flow.column_list or changes.columns
        return [c for c in chosen if c not in left_out and not c.startswith("__lh_")]

    def __call__(self, changes: DataFrame) -> DataFrame:
        flow = self.flow
        if flow.where:
            changes = changes.where(F.expr(flow.where))
        columns = self.columns(changes)
        if flow.stored_as_scd_type == 2:
            untracked = set(flow.track_history_except_column_list or [])
            track = flow.track_history_column_list or [c for c in columns if c not in untracked]
            return scd2_history(changes, flow.keys, flow.sequence_by, track, flow.apply_as_deletes, columns)
        return scd1_current(changes, flow.keys, flow.sequence_by, columns, flow.apply_as_deletes, columns)


def cdc_sink(flow: CdcFlow) -> RecomputeSink:
    """The SCD sink of ``flow``: for the keys a micro-batch touches, every change of theirs is
    read again and their rows rebuilt, so order and re-delivery do not matter."""
    merge_on = [*flow.keys, VALID_FROM] if flow.stored_as_scd_type == 2 else flow.keys
    return RecomputeSink(keys=list(flow.keys), reread_by=flow.keys[0], merge_on=merge_on, finalize=CdcRows(flow))
