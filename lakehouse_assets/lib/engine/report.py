"""What one run of a streaming table did, and samples of what it wrote."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType


@dataclass(frozen=True)
class WrittenSample:
    """The schema and a few rows (as text) of what a run last wrote to one table: its metadata's
    preview without reading the table back."""

    schema: StructType
    rows: list[dict[str, str | None]]


def sample_written(df: DataFrame, rows: int = 5) -> WrittenSample:
    """A few rows of ``df`` (a cached micro-batch: no new scan), as text so values Python cannot
    hold (timestamps before year 1 after a time-zone shift) still show."""
    as_text = df.select(*[F.col(f"`{c}`").cast("string").alias(c) for c in df.columns])
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
    """What one materialization of a streaming table did."""

    table: str
    batches: int = 0
    rows_read: int = 0
    rows_written: int = 0
    rows_quarantined: int = 0
    rows_dropped: int = 0
    late_rows_dropped: int = 0
    state_rows: int = 0
    expectation_failures: dict[str, int] = field(default_factory=dict)
    expectation_rows: int = 0
    duration_s: float = 0.0
    batch_durations_ms: list[int] = field(default_factory=list)
    # Per output table: a sample of the last micro-batch written to it (append and merge sinks).
    written: dict[str, WrittenSample] = field(default_factory=dict)
    # What a human should look at although the run succeeded (one sentence each).
    warnings: list[str] = field(default_factory=list)
