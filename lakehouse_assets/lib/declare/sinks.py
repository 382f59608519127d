"""Where and how a table's micro-batches are written (its :class:`TableSink`): seven write modes,
declared here, carried out by the engine (:mod:`lakehouse_assets.lib.engine.writing.writes`,
:mod:`~lakehouse_assets.lib.engine.writing.recompute` and :mod:`~lakehouse_assets.lib.engine.writing.overwrite`).

- :func:`append`: every row of every micro-batch is appended (bronze, sessions, attribution).
- :func:`merge`: upsert on keys (deduplication, latest-wins).
- :func:`recompute`: exact incremental results for aggregations: the keys a micro-batch touches
  are recomputed from the whole current input and replaced in one MERGE.
- :func:`overwrite`: the function's whole result replaces the table whenever an input changed
  (a materialized view that cannot be maintained incrementally).
- :func:`~lakehouse_assets.lib.declare.cdc.snapshot_cdc`: the function's rows are a full snapshot,
  applied as changes (SCD type 1 or 2) whenever an input changed.
- :func:`to_kafka`: publish every row to a Kafka topic instead of a Delta table (at least once).
- :func:`to_delta`: append every row to a Delta table at a path of your own, outside the data
  root (exactly once: Delta's streaming sink).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

from pyspark.sql import DataFrame

from lakehouse_assets.lib.errors import DeclarationError

if TYPE_CHECKING:
    from lakehouse_assets.lib.declare.inputs import Input


class TableSink:
    """Base class of the write modes. What a mode is to the declaration and the Dagster adapter is
    said here, by class attributes and :meth:`refuse`; what the engine does with it, by the
    strategy registered for its :attr:`kind` (:mod:`lakehouse_assets.lib.engine.writing.sink_kinds`)."""

    kind: ClassVar[str] = ""
    writes_table: ClassVar[bool] = True
    """Its rows go to the Delta table of the table's name under the data root."""
    whole: ClassVar[bool] = False
    """Each run's whole result is written (no query, no checkpoint, no flows, static inputs only)."""
    takes_flows: ClassVar[bool] = True
    """Further ``append_flow`` streams may write into it."""

    storage: ClassVar[str] = "delta"
    """What its rows are kept in (the asset's kind in Dagster)."""

    def own_path(self) -> str | None:
        """The Delta table it writes at a path of its own (outside the data root), if any."""
        return None

    def uri(self, table_path: str) -> str:
        """Where its rows are, given where the table of its name would be."""
        return self.own_path() or table_path

    def refuse(self, table: str, inputs: dict[str, Input], expects: bool, quarantine: str | None) -> None:
        """Raise :class:`DeclarationError` when ``table`` cannot be declared with this sink.

        :param table: the table's name.
        :param inputs: what it reads, by parameter.
        :param expects: it declares expectations.
        :param quarantine: its quarantine table, if any.
        """

    def unique_keys(self) -> tuple[str, ...] | None:
        """Columns no two rows of its table share after any commit of its own, if it keeps them so."""
        return None


@dataclass(frozen=True)
class AppendSink(TableSink):
    """Append every row."""

    kind: ClassVar[str] = "append"


@dataclass(frozen=True)
class MergeSink(TableSink):
    """Upsert on ``keys``: ``ignore`` keeps the first row ever seen for a key (insert-only
    deduplication); ``update`` overwrites it, or only with a newer ``sequence_by`` when given."""

    keys: list[str]
    when_matched: Literal["ignore", "update"] = "ignore"
    sequence_by: str | None = None

    kind: ClassVar[str] = "merge"

    def unique_keys(self) -> tuple[str, ...]:
        return tuple(self.keys)  # one source row per key, and a key already stored is matched


@dataclass(frozen=True)
class RecomputeSink(TableSink):
    """Recompute the rows of the keys a micro-batch touches from the table's one streaming
    input, read whole (bounded by ``reread_by``), and replace them in one MERGE."""

    keys: list[str]
    reread_by: str
    merge_on: list[str] | None = None
    finalize: Callable[[DataFrame], DataFrame] | None = None
    max_literal_values: int = 5000
    unique_on: tuple[str, ...] | None = None
    """``merge_on`` columns that ``finalize`` keeps unique (one output row each)."""

    kind: ClassVar[str] = "recompute"
    takes_flows: ClassVar[bool] = False

    def output(self, rows: DataFrame) -> DataFrame:
        return self.finalize(rows) if self.finalize else rows

    def unique_keys(self) -> tuple[str, ...] | None:
        return self.unique_on

    def refuse(self, table: str, inputs: dict[str, Input], expects: bool, quarantine: str | None) -> None:
        streams = [p for p, i in inputs.items() if i.streaming]
        if len(streams) != 1 or inputs[streams[0]].upstream_table is None:
            raise DeclarationError(
                f"{table}: a recompute table reads exactly one Delta table as a stream or change feed "
                f"(the rows it re-reads); its other inputs must be static(). Streaming inputs: {streams}"
            )


class WholeResultSink(TableSink):
    """A write mode that takes the function's whole result on each run, over static inputs."""

    whole: ClassVar[bool] = True
    takes_flows: ClassVar[bool] = False
    always: bool

    def refuse(self, table: str, inputs: dict[str, Input], expects: bool, quarantine: str | None) -> None:
        streams = [p for p, i in inputs.items() if i.streaming]
        if streams or quarantine:
            raise DeclarationError(
                f"{table}: an overwrite table reads every input as a snapshot (static()) and keeps no "
                f"quarantine; streaming inputs: {streams}, quarantine: {quarantine}"
            )


@dataclass(frozen=True)
class OverwriteSink(WholeResultSink):
    """Recompute the function over its whole (static) inputs and overwrite the table, when any
    input's Delta version moved since the last run (``always``: every run, for a function that
    also reads files)."""

    always: bool = False

    kind: ClassVar[str] = "overwrite"


@dataclass(frozen=True)
class SnapshotCdcSink(WholeResultSink):
    """Apply the function's rows, a full snapshot of a source, as changes to the table: new keys
    inserted, changed rows updated, keys gone from the snapshot deleted (SCD type 1) or their
    versions closed (SCD type 2: ``valid_from``, ``valid_to`` snapshot numbers, ``is_current``)."""

    always: bool = False
    keys: tuple[str, ...] = ()
    scd_type: int = 1

    kind: ClassVar[str] = "snapshot_cdc"


@dataclass(frozen=True)
class KafkaSink(TableSink):
    """Publish every row of every micro-batch to a Kafka topic (no Delta table): as JSON keyed by
    ``key``; with ``key`` None, each row is a Kafka record already (``value``, and optionally
    ``key``, ``partition``, ``headers``), sent as it is (SDP's and Lakeflow's Kafka sinks)."""

    topic: str
    key: list[str] | None
    bootstrap_servers: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    kind: ClassVar[str] = "kafka"
    writes_table: ClassVar[bool] = False
    storage: ClassVar[str] = "kafka"

    def uri(self, table_path: str) -> str:
        return f"kafka://{self.topic}"


@dataclass(frozen=True)
class DeltaPathSink(TableSink):
    """Append every row to the Delta table at ``path`` (a sink: not a table under the data root)."""

    path: str

    kind: ClassVar[str] = "delta_path"
    writes_table: ClassVar[bool] = False

    def own_path(self) -> str | None:
        return self.path

    def refuse(self, table: str, inputs: dict[str, Input], expects: bool, quarantine: str | None) -> None:
        if expects or quarantine:
            raise DeclarationError(f"{table}: a sink takes rows as they come; expect on the table it reads")


def to_delta(path: str) -> DeltaPathSink:
    """Append each micro-batch's rows to the Delta table at ``path`` (a local folder, ``file://``
    or ``s3a://``), created by the first write; exactly once, through Delta's own streaming sink
    (its transaction ids). The checkpoint stays under the data root; nothing else is written
    there. Rows go as they come: expectations belong to the table the sink reads.

    :param path: where the Delta table is.
    """
    return DeltaPathSink(path)


def append() -> AppendSink:
    """Append every row of every micro-batch."""
    return AppendSink()


def merge(
    keys: list[str], *, when_matched: Literal["ignore", "update"] = "ignore", sequence_by: str | None = None
) -> MergeSink:
    """Upsert each micro-batch on ``keys`` (one row per key within a batch, chosen
    deterministically).

    :param keys: the columns identifying a row.
    :param when_matched: ``ignore`` keeps the row first written (insert-only deduplication);
        ``update`` replaces it.
    :param sequence_by: with ``update``, replace only with a row whose value here is greater.
    """
    return MergeSink(list(keys), when_matched, sequence_by)


def recompute(
    keys: list[str],
    *,
    reread_by: str,
    merge_on: list[str] | None = None,
    finalize: Callable[[DataFrame], DataFrame] | None = None,
    max_literal_values: int = 5000,
) -> RecomputeSink:
    """Exact incremental results: for the keys a micro-batch touches, recompute the table's
    rows from the current input table and replace them in one MERGE.

    The table must read exactly one Delta table as a stream or change feed (the rows that are
    re-read); other inputs are static lookups, passed to the function as they are.

    :param keys: the output columns identifying the rows a change touches.
    :param reread_by: an input column bounding the re-read: only input rows whose value occurs
        among the micro-batch's changes are read again (a partition column such as
        ``event_date`` keeps the re-read small).
    :param merge_on: the columns matching stored rows (default: ``keys``).
    :param finalize: turns the function's rows into the table's rows (e.g. SCD2 history).
    :param max_literal_values: above this many distinct ``reread_by`` values the re-read uses a
        join instead of a literal filter.
    """
    return RecomputeSink(list(keys), reread_by, merge_on, finalize, max_literal_values)


def overwrite(*, always: bool = False) -> OverwriteSink:
    """Recompute the table from its whole inputs and overwrite it, in one Delta commit, when any
    input table's version moved since the last run (no streaming query: every input is read as
    a snapshot). The table is exact after every run; use :func:`recompute` when the function
    aggregates by keys and only the changed keys should be recomputed.

    :param always: recompute on every run (the function reads something other than Delta
        tables, whose changes the versions do not show).
    """
    return OverwriteSink(always)


def to_kafka(
    topic: str, *, key: list[str], bootstrap_servers: str | None = None, options: dict[str, str] | None = None
) -> KafkaSink:
    """Publish each micro-batch's rows to ``topic``: the message key is the JSON object of the
    ``key`` columns, the value the JSON object of the whole row. Spark's Kafka writer is at
    least once: a run killed while sending re-sends that micro-batch when it runs again, so
    rows should carry what a consumer deduplicates on (a change feed's commit version).

    :param topic: the topic written to.
    :param key: the columns forming the message key (Kafka keeps one key in one partition).
    :param bootstrap_servers: the brokers (default: ``LAKEHOUSE_KAFKA_BOOTSTRAP``, read at run
        time; without either, runs skip publishing and the change feed waits).
    :param options: Spark Kafka sink options (``kafka.``-prefixed ones go to the producer).
    """
    return KafkaSink(topic, list(key), bootstrap_servers, dict(options or {}))
