"""Databricks Lakeflow's ``import dlt``, so existing pipeline code loads as written.

While a pipeline's files load (:func:`~lakehouse_assets.lib.load_spark_pipeline`), ``import dlt``
gives them this module: Lakeflow's names on top of :mod:`~lakehouse_assets.lib.sdp.api`, so a
file written for Databricks declares the same datasets here::

    import dlt

    @dlt.table(comment="Orders as they came")
    @dlt.expect_or_drop("valid_amount", "amount > 0")
    def orders():
        return spark.readStream.format("json").load("/landing/orders")

    dlt.create_streaming_table("customers")
    dlt.apply_changes(target="customers", source="customer_changes", keys=["id"], sequence_by="ts")

As on Databricks, ``@dlt.table`` over a batch query is a materialized view and over a stream a
streaming table. What has no meaning outside Databricks is refused with one sentence naming it
(``path=``: tables live under the data root; ``row_filter``; ``apply_changes(where=...)``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from pyspark import pipelines as pyspark_dp
from pyspark.pipelines.source_code_location import get_caller_source_code_location

from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp import api
from lakehouse_assets.lib.sdp.graph import where as place_of

LAKEFLOW_TABLE = "_lakehouse_lakeflow_table"
"""Set on the function of a ``@dlt.table``: a batch query makes it a materialized view."""


def _caller() -> str:
    """``file:line`` of the pipeline code that called the function calling this one."""
    return place_of(get_caller_source_code_location(stacklevel=2))


def _refuse(place: str, what: str, **given: Any) -> None:
    for name, value in given.items():
        if value:
            raise DeclarationError(f"{place}: {what}: {name}= is a Databricks setting with no meaning here; remove it")


def table(
    query_function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    comment: str | None = None,
    spark_conf: dict[str, str] | None = None,
    table_properties: dict[str, str] | None = None,
    path: str | None = None,
    partition_cols: list[str] | None = None,
    cluster_by: list[str] | None = None,
    schema: Any = None,
    row_filter: str | None = None,
    temporary: bool = False,
) -> Any:
    """Lakeflow's ``@dlt.table``: a streaming table when the function returns a stream, a
    materialized view when it returns a batch DataFrame.

    :param name: the dataset's name (default: the function's).
    :param comment: the asset's description.
    :param spark_conf: Spark settings for the query.
    :param table_properties: Delta table properties.
    :param path: refused (tables are written under the data root).
    :param partition_cols: the table's partition columns.
    :param cluster_by: the table's clustering columns.
    :param schema: the table's schema (a DDL string or a ``StructType``).
    :param row_filter: refused (a Unity Catalog feature).
    :param temporary: accepted; every table here is the pipeline's own.
    """
    place = _caller()

    def register(function: Callable[..., Any]) -> Any:
        _refuse(place, f"@dlt.table {name or function.__name__}", path=path, row_filter=row_filter)
        setattr(function, LAKEFLOW_TABLE, True)
        pyspark_dp.table(
            name=name,
            comment=comment,
            spark_conf=spark_conf,
            table_properties=table_properties,
            partition_cols=partition_cols,
            cluster_by=cluster_by,
            schema=schema,
        )(function)
        return function

    return register if query_function is None else register(query_function)


def create_streaming_table(
    name: str,
    *,
    comment: str | None = None,
    spark_conf: dict[str, str] | None = None,
    table_properties: dict[str, str] | None = None,
    partition_cols: list[str] | None = None,
    cluster_by: list[str] | None = None,
    path: str | None = None,
    schema: Any = None,
    expect_all: dict[str, str] | None = None,
    expect_all_or_drop: dict[str, str] | None = None,
    expect_all_or_fail: dict[str, str] | None = None,
    row_filter: str | None = None,
) -> None:
    """Lakeflow's ``dlt.create_streaming_table``: a table its flows (``@dlt.append_flow``,
    ``dlt.apply_changes``) write. Expectations go on the flows' functions here.

    :param name: the table's name.
    :param path: refused (tables are written under the data root).
    :param spark_conf: refused: set it on the flows' functions (``@dlt.append_flow(spark_conf=...)``).
    :param expect_all: refused: put ``@dlt.expect_all`` on the flow's function instead.
    """
    place = _caller()
    _refuse(place, f"dlt.create_streaming_table({name!r})", path=path, row_filter=row_filter)
    if spark_conf:
        raise DeclarationError(
            f"{place}: dlt.create_streaming_table({name!r}): spark_conf= goes on its flows here (@dlt.append_flow(spark_conf=...))"
        )
    if expect_all or expect_all_or_drop or expect_all_or_fail:
        raise DeclarationError(
            f"{place}: dlt.create_streaming_table({name!r}): expectations here go on the functions of its flows "
            "(@dlt.expect_all... below @dlt.append_flow)"
        )
    pyspark_dp.create_streaming_table(
        name,
        comment=comment,
        table_properties=table_properties,
        partition_cols=partition_cols,
        cluster_by=cluster_by,
        schema=schema,
    )


def apply_changes(
    target: str,
    source: str,
    keys: list[Any],
    sequence_by: Any,
    where: Any = None,
    ignore_null_updates: bool = False,
    apply_as_deletes: Any = None,
    apply_as_truncates: Any = None,
    column_list: list[Any] | None = None,
    except_column_list: list[Any] | None = None,
    stored_as_scd_type: int | str = 1,
    track_history_column_list: list[Any] | None = None,
    track_history_except_column_list: list[Any] | None = None,
    flow_name: str | None = None,
    once: bool = False,
) -> None:
    """Lakeflow's ``dlt.apply_changes`` (``create_auto_cdc_flow`` by its older name): the CDC
    feed ``source`` applied to ``target`` as SCD type 1 or 2; with ``where``, only the changes
    meeting that condition."""
    api.create_auto_cdc_flow(
        target,
        source,
        keys,
        sequence_by,
        ignore_null_updates=ignore_null_updates,
        apply_as_deletes=apply_as_deletes,
        apply_as_truncates=apply_as_truncates,
        column_list=column_list,
        except_column_list=except_column_list,
        stored_as_scd_type=stored_as_scd_type,
        track_history_column_list=track_history_column_list,
        track_history_except_column_list=track_history_except_column_list,
        name=flow_name,
        once=once,
        where=where,
    )


# Lakeflow's older name of the snapshot flow.
apply_changes_from_snapshot = api.create_auto_cdc_from_snapshot_flow


def module() -> ModuleType:
    """A fresh ``dlt`` module: every name of :mod:`~lakehouse_assets.lib.sdp.api` plus Lakeflow's own."""
    dlt = ModuleType("dlt", __doc__)
    for name in api.__all__:
        setattr(dlt, name, getattr(api, name))
    dlt.table = table  # type: ignore[attr-defined]
    dlt.create_streaming_table = create_streaming_table  # type: ignore[attr-defined]
    dlt.apply_changes = apply_changes  # type: ignore[attr-defined]
    dlt.create_auto_cdc_flow = api.create_auto_cdc_flow  # type: ignore[attr-defined]
    dlt.apply_changes_from_snapshot = apply_changes_from_snapshot  # type: ignore[attr-defined]
    dlt.view = api.view  # type: ignore[attr-defined]
    return dlt


@contextmanager
def importable_as_dlt() -> Iterator[None]:
    """``import dlt`` gives :func:`module` while the pipeline's files load (any other ``dlt``,
    such as dltHub's package, is back afterwards)."""
    previous = sys.modules.get("dlt")
    sys.modules["dlt"] = module()
    try:
        yield
    finally:
        if previous is None:
            sys.modules.pop("dlt", None)
        else:
            sys.modules["dlt"] = previous
