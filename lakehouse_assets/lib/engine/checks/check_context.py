"""What an asset check may look at: the table, its changes since the last check, the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse_assets.lib.declare.checks import CheckOutcome
from lakehouse_assets.lib.engine.report import RunReport
from lakehouse_assets.lib.engine.state import delta_log
from lakehouse_assets.lib.paths import LakehousePaths


@dataclass
class CheckContext:
    """What a check may look at: the table, its changes since the last check, the run."""

    spark: SparkSession
    paths: LakehousePaths
    table: str
    report: RunReport | None
    # Delta version of each output table at its last materialization (absent: never checked).
    previous_versions: dict[str, int]
    previous_schema: dict[str, str] | None
    # The last completed evaluation of each check (absent: never evaluated, or not looked up).
    previous_outcomes: dict[str, CheckOutcome] = field(default_factory=dict)
    # Columns the table's own writer keeps unique (``TableSink.unique_keys``), if any.
    writer_keys: tuple[str, ...] | None = None
    # Every declared table's name (None: not known), for checks that look across tables.
    declared_tables: tuple[str, ...] | None = None
    _versions: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def read(self, name: str | None = None) -> DataFrame:
        return self.spark.read.format("delta").load(self.paths.table(name or self.table))

    def version(self, name: str | None = None) -> int:
        """The table's current Delta version (read once per step: checks run after the writes)."""
        name = name or self.table
        if name not in self._versions:
            self._versions[name] = delta_log.delta_version(self.paths.table(name)) or 0
        return self._versions[name]

    def table_id(self, name: str | None = None) -> str | None:
        """The Delta table's id (another id at the same path means another table)."""
        return delta_log.delta_table_id(self.paths.table(name or self.table))

    def unchanged(self, name: str | None = None) -> bool:
        """The table is still at the version of its last materialization: no row changed since,
        so a check of the changed rows has nothing to look at (and runs no Spark job)."""
        since = self.previous_versions.get(name or self.table)
        return since is not None and self.version(name) <= since

    def written_by_runs(self, name: str | None = None) -> Literal["appends", "writes"] | None:
        """How the table changed since its last checked version: only by micro-batch writes (no
        change made by hand, so what the run reports having written is all that changed), and
        those only appends, or not (see :func:`delta_log.micro_batch_writes`); None: otherwise."""
        since = self.previous_versions.get(name or self.table)
        path = self.paths.table(name or self.table)
        return None if since is None else delta_log.micro_batch_writes(path, since, self.version(name))

    def changes(
        self, name: str | None = None, kinds: tuple[str, ...] = ("insert", "update_postimage")
    ) -> DataFrame | None:
        """Rows changed since the last checked version (by default inserted or updated ones);
        None means 'everything' (no earlier version to compare with)."""
        since = self.previous_versions.get(name or self.table)
        if since is None:
            return None
        if self.unchanged(name):
            return self.read(name).limit(0)
        return (
            self.feed(name, since + 1, self.version(name))
            .where(F.col("_change_type").isin(*kinds))
            .drop("_change_type", "_commit_version", "_commit_timestamp")
        )

    def feed(self, name: str | None, first: int, last: int) -> DataFrame:
        """The table's change data feed of versions ``first`` to ``last``, with ``_change_type``."""
        return (
            self.spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", first)
            .option("endingVersion", last)
            .load(self.paths.table(name or self.table))
        )


def examples(df: DataFrame, columns: list[str], count: int = 5) -> str:
    """The first ``count`` rows' ``columns`` as text, for a failing check's metadata."""
    as_text = df.select(*[F.col(c).cast("string") for c in columns]).limit(count).collect()
    return ", ".join(str(tuple(r)) if len(r) > 1 else str(r[0]) for r in as_text)
