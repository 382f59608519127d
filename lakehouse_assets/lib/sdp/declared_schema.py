"""A dataset's declared ``schema=`` (``@dp.table``, ``@dp.materialized_view``,
``create_streaming_table``), enforced: the query's columns must be the declared ones (by name,
in any case and order); each is cast to its declared type (ANSI casts: a value that does not fit
fails the run, never becomes a silent null) and carries the declared comment into the table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from lakehouse_assets.lib.declare.sql_names import column
from lakehouse_assets.lib.errors import LakehouseError


def conform(rows: DataFrame, schema: StructType, table: str) -> DataFrame:
    """``rows`` as the declared ``schema``, or one sentence saying which columns differ.

    :param rows: the query's result (the framework's own ``__lh_`` columns are kept as they are).
    :param schema: the declared schema.
    :param table: the dataset, for the message.
    """
    own = [c for c in rows.columns if c.startswith("__lh_")]
    found = {c.lower(): c for c in rows.columns if c not in own}
    declared = {f.name.lower() for f in schema.fields}
    missing = [f.name for f in schema.fields if f.name.lower() not in found]
    undeclared = [c for low, c in found.items() if low not in declared]
    if missing or undeclared:
        raise LakehouseError(
            f"{table}: its query's columns do not match its schema=: "
            f"missing {', '.join(missing) or 'none'}; not declared {', '.join(undeclared) or 'none'}"
        )
    typed = [column(found[f.name.lower()]).cast(f.dataType).alias(f.name, metadata=f.metadata) for f in schema.fields]
    return rows.select(*typed, *[column(c) for c in own])


@dataclass(frozen=True)
class DeclaredSchema:
    """A flow's query whose result is conformed to its dataset's declared schema (a DDL string
    is parsed by the session the query runs on)."""

    query: Callable[..., DataFrame]
    table: str
    schema: StructType | str

    def streamed_folders(self) -> Any:
        """The folders the query's code streams now (see :class:`~lakehouse_assets.lib.sdp.transform.PipelineQuery`)."""
        return self.query.streamed_folders()  # type: ignore[attr-defined]  # only a pipeline's query is wrapped

    def __call__(self, **frames: Any) -> DataFrame:
        rows = self.query(**frames)
        schema = self.schema
        if isinstance(schema, str):
            schema = rows.sparkSession.createDataFrame([], schema).schema
        return conform(rows, schema, self.table)
