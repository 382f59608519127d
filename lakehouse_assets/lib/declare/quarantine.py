"""Where rows that fail a table's ``quarantine`` expectations go, and what they carry."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Quarantine:
    """Where rows failing ``quarantine`` expectations go.

    :param table: the quarantine table's name.
    :param columns: columns of the transform's output to keep (None: the table's columns).
    :param with_failures: add ``failed_expectations``, the names each row failed.
    :param max_share: the share of a run's rows quarantined above which ``quarantine_rate`` warns.
    :param column_descriptions: per column of the quarantine table, what it holds (the
        framework's own columns, such as ``failed_expectations``, are described already).
    :param traced_by: columns every quarantined row must carry (``quarantine_rows_traceable``);
        None: ``failed_expectations`` (with failures) and ``_source_file`` (when kept).
    """

    table: str
    columns: list[str] | None = None
    with_failures: bool = True
    max_share: float = 0.1
    column_descriptions: dict[str, str] = field(default_factory=dict)
    traced_by: list[str] | None = None

    @property
    def traced_columns(self) -> list[str]:
        if self.traced_by is not None:
            return list(self.traced_by)
        kept_file = self.columns is not None and "_source_file" in self.columns
        return (["failed_expectations"] if self.with_failures else []) + (["_source_file"] if kept_file else [])
