"""``pyspark.pipelines`` plus Lakeflow's expectations and SCD type 2 Auto CDC.

    from lakehouse_assets.lib import dp

    @dp.table
    @dp.expect_or_drop("valid_amount", "amount > 0")
    def orders():
        return spark.readStream.table("raw_orders")

Every name of ``pyspark.pipelines`` is here unchanged. Added, as Databricks Lakeflow has them:
the expectation decorators (placed between ``@dp.table`` and the function),
:func:`create_auto_cdc_flow` with ``stored_as_scd_type=2`` and ``track_history_column_list``,
``view``, ``read`` and ``read_stream``.
They take effect when the pipeline runs here (:func:`~lakehouse_assets.lib.load_spark_pipeline`);
each expectation is counted per run and shown as an asset check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.pipelines import (
    create_sink,
    create_streaming_table,
    materialized_view,
    table,
    temporary_view,
)
from pyspark.pipelines.flow import Flow
from pyspark.pipelines.graph_element_registry import get_active_graph_element_registry
from pyspark.pipelines.source_code_location import get_caller_source_code_location

from lakehouse_assets.lib.declare.expectations import Expectation
from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.graph import CdcFlow, column_name, column_names, sql_text
from lakehouse_assets.lib.sdp.spark_proxy import SPARK

view = temporary_view
"""Lakeflow's name for :func:`temporary_view`."""

streaming_table = table
"""The tutorials' name for a streaming :func:`table`."""


def read(name: str) -> Any:
    """Lakeflow's ``dp.read``: the dataset ``name`` as a snapshot (``spark.read.table``)."""
    return SPARK.read.table(name)


def read_stream(name: str) -> Any:
    """Lakeflow's ``dp.read_stream``: the dataset ``name`` as a stream (``spark.readStream.table``)."""
    return SPARK.readStream.table(name)


ONCE_ATTRIBUTE = "_lakehouse_once"
"""Set on the function of an ``append_flow(once=True)``."""


def append_flow(
    *,
    target: str,
    name: str | None = None,
    spark_conf: dict[str, str] | None = None,
    comment: str | None = None,
    once: bool = False,
) -> Callable[[Callable[..., Any]], Any]:
    """pyspark's ``append_flow``, plus Lakeflow's ``once``.

    :param target: the streaming table the flow appends to.
    :param name: the flow's name (default: the function's).
    :param spark_conf: as pyspark's.
    :param comment: what the flow is for (documentation only).
    :param once: a backfill: the function reads snapshots (``spark.read``) and its rows are
        appended on the table's next run only, and again after a full refresh.
    """

    location = get_caller_source_code_location(stacklevel=1)

    def register(function: Callable[..., Any]) -> Any:
        if once:
            setattr(function, ONCE_ATTRIBUTE, True)
        flow = Flow(name or function.__name__, target, dict(spark_conf or {}), location, function)
        get_active_graph_element_registry().register_flow(flow)
        return function

    return register


EXPECTATIONS_ATTRIBUTE = "_lakehouse_expectations"
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _attach(expectations: list[Expectation]) -> Decorator:
    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(function):
            raise DeclarationError(
                f"@dp.expect... applies to a query function: place it below @dp.table or "
                f"@dp.materialized_view, next to the def (got {function!r})"
            )
        function.__dict__.setdefault(EXPECTATIONS_ATTRIBUTE, []).extend(expectations)
        return function

    return decorate


def expectations_of(function: Callable[..., Any]) -> list[Expectation]:
    """The expectations the decorators attached to a query function."""
    return list(getattr(function, EXPECTATIONS_ATTRIBUTE, []))


def expect_each(expectations: list[Expectation]) -> Decorator:
    """Attach ``expectations`` as they are (SQL's ``CONSTRAINT ... EXPECT``)."""
    return _attach(list(expectations))


def expect(name: str, constraint: str) -> Decorator:
    """Keep rows failing ``constraint`` (a SQL condition) and count them."""
    return _attach([Expectation(name, constraint, "warn")])


def expect_or_drop(name: str, constraint: str) -> Decorator:
    """Leave rows failing ``constraint`` out of the table, counted."""
    return _attach([Expectation(name, constraint, "drop")])


def expect_or_fail(name: str, constraint: str) -> Decorator:
    """Fail the run when a row fails ``constraint``."""
    return _attach([Expectation(name, constraint, "fail")])


def expect_or_quarantine(name: str, constraint: str) -> Decorator:
    """Send rows failing ``constraint`` to the table's quarantine table ``<table>_quarantine``."""
    return _attach([Expectation(name, constraint, "quarantine")])


def expect_all(expectations: dict[str, str]) -> Decorator:
    """:func:`expect` for each name and constraint."""
    return _attach([Expectation(n, c, "warn") for n, c in expectations.items()])


def expect_all_or_drop(expectations: dict[str, str]) -> Decorator:
    """:func:`expect_or_drop` for each name and constraint."""
    return _attach([Expectation(n, c, "drop") for n, c in expectations.items()])


def expect_all_or_fail(expectations: dict[str, str]) -> Decorator:
    """:func:`expect_or_fail` for each name and constraint."""
    return _attach([Expectation(n, c, "fail") for n, c in expectations.items()])


def create_auto_cdc_flow(
    target: str,
    source: str,
    keys: list[Any],
    sequence_by: Any,
    *,
    ignore_null_updates: bool = False,
    apply_as_deletes: Any = None,
    apply_as_truncates: Any = None,
    column_list: list[Any] | None = None,
    except_column_list: list[Any] | None = None,
    stored_as_scd_type: int | str = 1,
    track_history_column_list: list[Any] | None = None,
    track_history_except_column_list: list[Any] | None = None,
    name: str | None = None,
    once: bool = False,
    where: Any = None,
) -> None:
    """Apply the CDC feed ``source`` to the streaming table ``target`` as SCD type 1 or 2.

    :param target: the streaming table (``create_streaming_table``) the changes go to.
    :param source: the dataset the changes are read from, as a stream.
    :param keys: the columns identifying a row.
    :param sequence_by: the column ordering the changes of a key.
    :param ignore_null_updates: not supported (raises when True).
    :param apply_as_deletes: a SQL condition marking a change as a delete.
    :param apply_as_truncates: not supported (raises when set).
    :param column_list: the columns kept (default: all but ``except_column_list``).
    :param except_column_list: columns left out.
    :param stored_as_scd_type: 1 (latest state per key) or 2 (history with ``valid_from``,
        ``valid_to``, ``is_current``).
    :param track_history_column_list: SCD2: the columns whose changes open a new version.
    :param track_history_except_column_list: SCD2: the columns whose changes do not.
    :param name: the flow's name (default: ``target``).
    :param once: not supported (raises when True).
    :param where: only the changes meeting this SQL condition (or column) apply (Lakeflow's
        ``apply_changes(where=...)``).
    """
    location = get_caller_source_code_location(stacklevel=1)
    for flag, given in (
        ("ignore_null_updates", ignore_null_updates),
        ("apply_as_truncates", apply_as_truncates),
        ("once", once),
    ):
        if given:
            raise DeclarationError(f"create_auto_cdc_flow({target!r}): {flag} is not supported here")
    if str(stored_as_scd_type) not in ("1", "2"):
        raise DeclarationError(
            f"create_auto_cdc_flow({target!r}): stored_as_scd_type is 1 or 2, not {stored_as_scd_type!r}"
        )

    get_active_graph_element_registry().register_auto_cdc_flow(
        CdcFlow(  # type: ignore[arg-type]
            name=name or target,
            target=target,
            source=source,
            keys=column_names(keys, "keys", location) or [],
            sequence_by=column_name(sequence_by, "sequence_by", location),
            apply_as_deletes=sql_text(apply_as_deletes),
            column_list=column_names(column_list, "column_list", location),
            except_column_list=column_names(except_column_list, "except_column_list", location),
            stored_as_scd_type=int(stored_as_scd_type),
            track_history_column_list=column_names(track_history_column_list, "track_history_column_list", location),
            track_history_except_column_list=column_names(
                track_history_except_column_list, "track_history_except_column_list", location
            ),
            source_code_location=location,
            where=sql_text(where),
        )
    )


def create_auto_cdc_from_snapshot_flow(
    target: str,
    source: Any,
    keys: list[Any],
    *,
    stored_as_scd_type: int | str = 1,
    track_history_column_list: list[Any] | None = None,
    track_history_except_column_list: list[Any] | None = None,
    name: str | None = None,
) -> None:
    """Apply a full snapshot of ``source``, read each run, to the streaming table ``target`` as
    changes: SCD type 1 (the table is the latest snapshot) or 2 (history, versions numbered by
    snapshot in ``valid_from`` / ``valid_to``, and ``is_current``).

    :param target: the streaming table (``create_streaming_table``) the changes go to.
    :param source: the dataset (a materialized view, table or temporary view) whose snapshot is
        read each run; a function of the last version (historical snapshots) is not supported.
    :param keys: the columns identifying a row; unique within a snapshot.
    :param stored_as_scd_type: 1 or 2.
    :param track_history_column_list: not supported (raises when set).
    :param track_history_except_column_list: not supported (raises when set).
    :param name: the flow's name (default: ``target``).
    """
    location = get_caller_source_code_location(stacklevel=1)
    place = f"{location.filename}:{location.line_number}"
    if not isinstance(source, str):
        raise DeclarationError(
            f"{place}: create_auto_cdc_from_snapshot_flow({target!r}): the source is a dataset's name here; "
            "a function returning historical snapshots is not supported"
        )
    if track_history_column_list or track_history_except_column_list:
        raise DeclarationError(
            f"{place}: create_auto_cdc_from_snapshot_flow({target!r}): track_history_* is not supported here"
        )
    if str(stored_as_scd_type) not in ("1", "2"):
        raise DeclarationError(f"{place}: stored_as_scd_type is 1 or 2, not {stored_as_scd_type!r}")
    get_active_graph_element_registry().register_auto_cdc_flow(
        CdcFlow(  # type: ignore[arg-type]
            name=name or target,
            target=target,
            source=source,
            keys=column_names(keys, "keys", location) or [],
            stored_as_scd_type=int(stored_as_scd_type),
            source_code_location=location,
            from_snapshot=True,
        )
    )


__all__ = [
    "append_flow",
    "create_auto_cdc_flow",
    "create_auto_cdc_from_snapshot_flow",
    "create_sink",
    "create_streaming_table",
    "expect",
    "expect_all",
    "expect_all_or_drop",
    "expect_all_or_fail",
    "expect_or_drop",
    "expect_or_fail",
    "expect_or_quarantine",
    "materialized_view",
    "read",
    "read_stream",
    "streaming_table",
    "table",
    "temporary_view",
    "view",
]
