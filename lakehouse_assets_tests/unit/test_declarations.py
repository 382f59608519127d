"""Declarations refused before anything runs: each a DeclarationError (a LakehouseError) whose
one sentence names the table and what to change. Spark-free: no session, no JVM."""

from __future__ import annotations

import types

import pytest

from lakehouse_assets.lib import (
    DeclarationError,
    LakehouseError,
    append_flow,
    collect_tables,
    custom_check,
    kafka,
    overwrite,
    recompute,
    rows_satisfy,
    schema_unchanged,
    static,
    stream,
    streaming_table,
)
from lakehouse_assets.lib.declare.quarantine import Quarantine

pytestmark = pytest.mark.unit


def test_an_input_that_is_not_a_parameter() -> None:
    with pytest.raises(DeclarationError, match=r"orders: inputs \['customers'\] are not parameters of the function"):

        @streaming_table(group="g", inputs={"customers": static("customers")})
        def orders(bronze):  # never run
            return bronze


def test_a_table_is_partitioned_or_clustered_not_both() -> None:
    with pytest.raises(DeclarationError, match=r"orders: a Delta table is partitioned or clustered, not both"):

        @streaming_table(group="g", inputs={"raw": stream("raw")}, partition_by=["day"], cluster_by=["customer_id"])
        def orders(raw):  # never run
            return raw

    @streaming_table(group="g", inputs={"raw": stream("raw")}, cluster_by=["customer_id"])
    def clustered(raw):  # never run
        return raw

    assert clustered.cluster_by == ["customer_id"] and clustered.partition_by == []


def test_a_once_flow_reads_snapshots() -> None:
    with pytest.raises(DeclarationError, match=r"orders: once-flow 'old' is a backfill: give it snapshots"):

        @streaming_table(group="g", inputs={"raw": stream("raw")}, flows=[append_flow("old", inputs={}, once=True)])
        def orders(raw):  # never run
            return raw

    @streaming_table(group="g", inputs={"raw": stream("raw")},
                     flows=[append_flow("old", inputs={"raw": static("old_orders")}, once=True)])  # fmt: skip
    def orders2(raw):  # never run
        return raw

    assert [(f.flow, f.once) for f in orders2.flow_runs()] == [(None, False), ("old", True)]


def test_a_recompute_table_reads_exactly_one_stream() -> None:
    with pytest.raises(DeclarationError, match="exactly one Delta table as a stream or change feed"):

        @streaming_table(group="g", sink=recompute(keys=["k"], reread_by="k"))
        def totals(a, b):
            return a


def test_an_overwrite_table_reads_snapshots_and_keeps_no_quarantine() -> None:
    with pytest.raises(
        DeclarationError, match=r"overwrite table reads every input as a snapshot .* streaming inputs: \['a'\]"
    ):

        @streaming_table(group="g", sink=overwrite())
        def snapshot(a):
            return a

    with pytest.raises(DeclarationError, match="quarantine: snapshot_q"):

        @streaming_table(group="g", sink=overwrite(), inputs={"a": static("a")}, quarantine=Quarantine("snapshot_q"))
        def snapshot2(a):
            return a


def test_flows_are_named_once_and_read_parameters_of_their_function() -> None:
    with pytest.raises(DeclarationError, match="two flows are named 'eu'"):

        @streaming_table(
            group="g",
            flows=[append_flow("eu", inputs={"a": stream("x")}), append_flow("eu", inputs={"a": stream("y")})],
        )
        def orders(a):
            return a

    with pytest.raises(DeclarationError, match=r"flow 'us' inputs \['z'\] are not parameters"):

        @streaming_table(group="g", flows=[append_flow("us", inputs={"z": stream("y")})])
        def orders2(a):
            return a

    with pytest.raises(DeclarationError, match="letters, digits"):
        append_flow("eu orders", inputs={})


def test_a_recompute_table_has_no_append_flows() -> None:
    with pytest.raises(DeclarationError, match="cannot have append flows"):

        @streaming_table(
            group="g", sink=recompute(keys=["k"], reread_by="k"), flows=[append_flow("f", inputs={"a": stream("b")})]
        )
        def totals(a):
            return a


def test_kafka_takes_topics_or_a_pattern() -> None:
    with pytest.raises(DeclarationError, match=r"give a topic .* or a pattern, not both and not neither"):
        kafka()
    with pytest.raises(DeclarationError):
        kafka("events", pattern="ev.*")


def test_two_tables_of_one_name_in_a_package() -> None:
    package = types.ModuleType("two_of_a_name")
    package.__path__ = []  # a package with no sub-modules

    @streaming_table(group="g", name="orders")
    def a(x):
        return x

    @streaming_table(group="g", name="orders")
    def b(x):
        return x

    package.a, package.b = a, b
    with pytest.raises(DeclarationError, match="two tables are named 'orders' in two_of_a_name"):
        collect_tables(package)


def test_every_error_of_the_framework_has_one_root() -> None:
    from lakehouse_assets.lib import EngineUnavailable, ExpectationFailed, KafkaProblem, RootUnusable

    for error in (DeclarationError, EngineUnavailable, ExpectationFailed, KafkaProblem, RootUnusable):
        assert issubclass(error, LakehouseError)


@pytest.mark.unit
def test_check_names_are_refused_when_dagster_could_not_tell_them_apart() -> None:
    def table(checks: list) -> None:
        @streaming_table(group="g", checks=checks)
        def t(a):  # never run
            return a

    with pytest.raises(DeclarationError, match="t: check name 'kwh-ok' may hold only letters, digits and _"):
        table([rows_satisfy("kwh-ok", "kwh >= 0")])
    with pytest.raises(DeclarationError, match="t: two checks are named 'ok'"):
        table([rows_satisfy("ok", "kwh >= 0"), custom_check("ok", bool, description="d")])
    with pytest.raises(DeclarationError, match="'schema_unchanged' is the name of a check every table gets"):
        table([custom_check("schema_unchanged", bool, description="d")])
    with pytest.raises(DeclarationError, match="function must be callable"):
        custom_check("c", "kwh >= 0", description="d")  # type: ignore[arg-type]
    table([schema_unchanged(severity="WARN"), rows_satisfy("kwh_ok", "kwh >= 0")])  # a default replaced: fine
