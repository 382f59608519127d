"""Applying a CDC feed: SCD type 2 history or SCD type 1 current state, as a framework sink.

The open counterpart of Lakeflow's ``create_auto_cdc_flow`` (``APPLY CHANGES INTO``), which
open-source Spark cannot yet run against Delta. One declaration gives either stored form:

    sink=auto_cdc(keys=["customer_id"], sequence_by="updated_at",
                  track=["name", "email", "tier", "country"],
                  delete_when="op = 'delete'", stored_as="scd2")

How it stays exact whatever order changes arrive in: for the keys a micro-batch touches, the
sink re-reads *every* change of those keys from the input table (the table's transform types
and validates them), rebuilds their whole history with :func:`scd2_history` (or
:func:`scd1_current`) and replaces their rows in one idempotent MERGE
(:func:`~lakehouse_assets.lib.declare.sinks.recompute`). So the result depends only on the set of
changes landed: a change that arrives after a newer one lands in the right place of the
history, and a re-delivered change creates nothing.

Semantics, per key, taking changes in ``sequence_by`` order:

- an upsert whose tracked columns equal the current version's changes nothing (untracked
  columns of the current version take its values);
- any other upsert closes the current version (``valid_to`` = its sequence value) and opens a
  new one (``valid_from`` = its sequence value);
- a change matching ``delete_when`` closes the current version and opens none;
- several changes of one key with the same sequence value collapse to one, chosen
  deterministically: a delete wins, else the greatest tracked values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.sinks import RecomputeSink, SnapshotCdcSink
from lakehouse_assets.lib.errors import DeclarationError

VALID_FROM, VALID_TO, IS_CURRENT = "valid_from", "valid_to", "is_current"
_DELETE, _OPENS, _GROUP = "__lh_cdc_delete", "__lh_cdc_opens", "__lh_cdc_group"


def _null_safe_equal(columns: list[str], left: Callable[[str], Column], right: Callable[[str], Column]) -> Column:
    result = F.lit(True)
    for c in columns:
        result = result & left(c).eqNullSafe(right(c))
    return result


def _one_change_per_sequence(changes: DataFrame, keys: list[str], sequence_by: str, columns: list[str]) -> DataFrame:
    """Collapse changes of one key sharing a sequence value (re-deliveries and ties) to one."""
    order = [F.col(_DELETE).desc()] + [F.col(c).desc_nulls_last() for c in columns]
    window = Window.partitionBy(*keys, sequence_by).orderBy(*order)
    return (
        changes.withColumn("__lh_cdc_rank", F.row_number().over(window))
        .where("__lh_cdc_rank = 1")
        .drop("__lh_cdc_rank")
    )


def scd2_history(
    changes: DataFrame,
    keys: list[str],
    sequence_by: str,
    track: list[str],
    delete_when: str | None = None,
    columns: list[str] | None = None,
) -> DataFrame:
    """SCD type 2 history of a batch of changes (pure): ``keys``, the stored ``columns``
    (default ``track``), ``valid_from``, ``valid_to`` (null while current) and ``is_current``.

    Only ``track`` columns open versions; other stored columns take the values of the
    version's latest upsert. The result depends only on the set of ``changes``.
    """
    columns = columns or track
    untracked = [c for c in columns if c not in track]
    is_delete = F.coalesce(F.expr(delete_when), F.lit(False)) if delete_when else F.lit(False)
    flagged = changes.select(*keys, *columns, sequence_by, is_delete.alias(_DELETE)).where(
        F.col(sequence_by).isNotNull()
    )
    flagged = _one_change_per_sequence(flagged, keys, sequence_by, track)
    by_key = Window.partitionBy(*keys).orderBy(sequence_by)
    previous_same = _null_safe_equal(track, F.col, lambda c: F.lag(c).over(by_key))
    opens = ~F.col(_DELETE) & (F.lag(_DELETE).over(by_key).isNull() | F.lag(_DELETE).over(by_key) | ~previous_same)
    # Every opening upsert or delete starts a group; the other upserts repeat their group's version.
    marked = flagged.withColumn(_OPENS, opens).withColumn(
        _GROUP,
        F.sum(F.when(F.col(_OPENS) | F.col(_DELETE), 1).otherwise(0)).over(
            by_key.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        ),
    )
    groups = marked.groupBy(*keys, _GROUP).agg(
        F.min(sequence_by).alias(VALID_FROM),
        F.bool_or(_OPENS).alias(_OPENS),
        *[F.min_by(c, sequence_by).alias(c) for c in track],
        *[F.max_by(c, sequence_by).alias(c) for c in untracked],
    )
    next_group = Window.partitionBy(*keys).orderBy(_GROUP)
    return (
        groups.withColumn(VALID_TO, F.lead(VALID_FROM).over(next_group))
        .where(F.col(_OPENS))
        .select(
            *keys,
            *columns,
            VALID_FROM,
            VALID_TO,
            F.col(VALID_TO).isNull().alias(IS_CURRENT),
        )
    )


def scd1_current(
    changes: DataFrame,
    keys: list[str],
    sequence_by: str,
    track: list[str],
    delete_when: str | None = None,
    columns: list[str] | None = None,
) -> DataFrame:
    """SCD type 1 of a batch of changes (pure): the latest change per key, none when it is a
    delete; ``keys``, the stored ``columns`` (default ``track``) and ``sequence_by``."""
    columns = columns or track
    is_delete = F.coalesce(F.expr(delete_when), F.lit(False)) if delete_when else F.lit(False)
    flagged = changes.select(*keys, *columns, sequence_by, is_delete.alias(_DELETE)).where(
        F.col(sequence_by).isNotNull()
    )
    flagged = _one_change_per_sequence(flagged, keys, sequence_by, track)
    latest = Window.partitionBy(*keys).orderBy(F.col(sequence_by).desc())
    return (
        flagged.withColumn("__lh_cdc_rank", F.row_number().over(latest))
        .where("__lh_cdc_rank = 1 AND NOT " + _DELETE)
        .select(*keys, *columns, sequence_by)
    )


def auto_cdc(
    keys: list[str],
    sequence_by: str,
    track: list[str],
    delete_when: str | None = None,
    columns: list[str] | None = None,
    stored_as: Literal["scd1", "scd2"] = "scd2",
    reread_by: str | None = None,
) -> RecomputeSink:
    """A sink applying the table's changes (its transform's output) as SCD type 2 or 1.

    ``reread_by`` is the input column used to re-read the touched keys' changes (default: the
    first key, which must then have the same name and value in the input table).
    """

    def finalize(changes: DataFrame) -> DataFrame:
        build = scd2_history if stored_as == "scd2" else scd1_current
        return build(changes, keys, sequence_by, track, delete_when, columns)

    merge_on = [*keys, VALID_FROM] if stored_as == "scd2" else keys
    return RecomputeSink(
        keys=keys,
        reread_by=reread_by or keys[0],
        merge_on=merge_on,
        finalize=finalize,
        unique_on=tuple(merge_on),  # scd2_history and scd1_current make one row per merge_on
    )


def snapshot_cdc(*, keys: list[str], scd_type: int = 1, always: bool = False) -> SnapshotCdcSink:
    """Apply each run's full snapshot (the function over static inputs) as changes, like
    Lakeflow's ``create_auto_cdc_from_snapshot_flow``.

    :param keys: the columns identifying a row; unique within a snapshot.
    :param scd_type: 1 (the table is the latest snapshot) or 2 (history: every version of a row
        with the snapshot numbers it was valid between, ``valid_from`` inclusive, ``valid_to``
        exclusive, null while current, and ``is_current``).
    :param always: apply a snapshot every run, also when no Delta input moved (for functions
        that read files).
    """
    if not keys or scd_type not in (1, 2):
        raise DeclarationError(f"snapshot_cdc(keys={keys!r}, scd_type={scd_type!r}): give keys, and scd_type 1 or 2")
    return SnapshotCdcSink(always, tuple(keys), scd_type)


__all__ = ["auto_cdc", "scd1_current", "scd2_history", "snapshot_cdc"]
