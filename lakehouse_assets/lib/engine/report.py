"""What one run of a streaming table did, and samples of what it wrote."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, StructField, StructType

from lakehouse_assets.lib.declare.sql_names import column


@dataclass(frozen=True)
class WrittenSample:
    """The schema and a few rows (as text) of what a run last wrote to one table: its metadata's
    preview without reading the table back."""

    schema: StructType
    rows: list[dict[str, str | None]]


def sample_written(df: DataFrame, rows: int = 5) -> WrittenSample:
    """A few rows of ``df`` (a cached micro-batch: no new scan), as text so values Python cannot
    hold (timestamps before year 1 after a time-zone shift) still show."""

    def shown(field: StructField) -> Column:
        shown_column = column(field.name)
        # A sum of doubles shows as 1517.0200000000002: six decimals are enough to read it.
        if isinstance(field.dataType, (DoubleType, FloatType)):
            shown_column = F.round(shown_column, 6)
        return shown_column.cast("string").alias(field.name)

    as_text = df.select(*[shown(f) for f in df.schema.fields])
    return WrittenSample(df.schema, [r.asDict() for r in as_text.limit(rows).collect()])


@dataclass(frozen=True)
class ExpectationSplit:
    """A micro-batch split by its expectations, with the row counts of each part."""

    kept: DataFrame
    quarantined: DataFrame
    rows: int
    quarantined_rows: int
    kept_rows: int


@dataclass
class RunReport:
    """What one materialization of a streaming table did.

    Its figures add up: ``rows_read`` (what the query read from its inputs, as the per-batch log
    lines say) = ``rows_written`` + ``rows_quarantined`` + ``rows_dropped`` + ``rows_reduced``,
    where ``rows_dropped`` sums the named kinds (by expectations, duplicates merged away, behind
    the watermark) and ``rows_reduced`` is what the table's function itself took away: lines it
    filters (blank lines), rows it folds into aggregates or holds in state until the watermark
    passes (0 for a row-per-row table; negative when it makes more rows than it reads, as a
    history that closes one version and opens another for one change)."""

    table: str
    batches: int = 0
    rows_read: int = 0
    # Rows the table's function produced from what it read (the rows its sinks were handed).
    result_rows: int = 0
    rows_written: int = 0
    rows_quarantined: int = 0
    dropped_by_expectations: int = 0
    # Result rows a merge sink found already present (re-deliveries, older versions of a key).
    dropped_duplicates: int = 0
    dropped_late: int = 0
    state_rows: int = 0
    watermark: str | None = None
    expectation_failures: dict[str, int] = field(default_factory=dict)
    expectation_rows: int = 0
    duration_s: float = 0.0
    batch_durations_ms: list[int] = field(default_factory=list)
    # Per output table: a sample of the last micro-batch written to it (append and merge sinks).
    written: dict[str, WrittenSample] = field(default_factory=dict)
    # The landed files the run's micro-batches read (their ``_source_file``); None: not known.
    landed_files: list[str] | None = None
    # Schema inferred or evolved for the run's landed JSON, and columns the table gained.
    schema_changes: list[str] = field(default_factory=list)
    # Landed files the run set aside whole (names; the warnings say why).
    files_set_aside: list[str] = field(default_factory=list)
    # What a human should look at although the run succeeded (one sentence each).
    warnings: list[str] = field(default_factory=list)
    # The run emptied its outputs and reset its checkpoint first.
    full_refresh: bool = False
    # How a recompute or overwrite table was brought up to date ("incremental", "full").
    refresh: str | None = None
    # Changes of its input waiting for a sink that could not send (no broker); None: not such a run.
    changes_waiting: int | None = None
    # Why a flow's query did not start (nothing new in its input), one sentence each.
    skipped: list[str] = field(default_factory=list)

    @property
    def rows_dropped(self) -> int:
        return self.dropped_by_expectations + self.dropped_duplicates + self.dropped_late

    @property
    def rows_reduced(self) -> int:
        return self.rows_read - self.dropped_late - self.result_rows

    @property
    def changed_nothing(self) -> bool:
        """Nothing was read or reset: the run leaves the table as the last one did."""
        return self.rows_read == 0 and self.result_rows == 0 and not self.full_refresh

    def summary(self) -> str:
        """One line: the figures of the run, adding up."""
        kinds = [
            f"{n} {kind}"
            for n, kind in (
                (self.dropped_by_expectations, "by expectations"),
                (self.dropped_duplicates, "duplicates"),
                (self.dropped_late, "behind the watermark"),
            )
            if n
        ]
        parts = [f"{self.rows_written} written", f"{self.rows_quarantined} quarantined"]
        parts.append(f"{self.rows_dropped} dropped" + (f" ({', '.join(kinds)})" if kinds else ""))
        line = f"{self.table}: {self.rows_read} rows read = {' + '.join(parts)}"
        if self.rows_reduced > 0:
            line += f" + {self.rows_reduced} reduced by the function (filtered, aggregated or in state)"
        elif self.rows_reduced < 0:  # more rows out than in: an SCD2 change closes a version and opens one
            line += f" - {-self.rows_reduced} more made by the function (e.g. versions a change closes and opens)"
        if self.state_rows or self.watermark:
            line += f"; state holds {self.state_rows} rows, watermark {self.watermark or 'not set yet'}"
        if self.files_set_aside:
            line += f"; {len(self.files_set_aside)} landed file(s) set aside"
        if self.skipped:
            line += f"; {'; '.join(self.skipped)}"
        return f"{line}; {self.batches} micro-batch{'' if self.batches == 1 else 'es'}, {self.duration_s}s"
