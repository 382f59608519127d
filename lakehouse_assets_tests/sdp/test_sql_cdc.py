"""Lakeflow's SQL Auto CDC statements read as written: ``CREATE FLOW … AS AUTO CDC INTO …`` and
``APPLY CHANGES INTO …`` become the flows ``create_auto_cdc_flow`` registers; what is not carried
out stops loading with the file, the line and what to write instead. Spark-free."""

from __future__ import annotations

import pytest
from pyspark.pipelines.source_code_location import SourceCodeLocation

from lakehouse_assets.lib.errors import DeclarationError
from lakehouse_assets.lib.sdp.sql_cdc import auto_cdc_flow

pytestmark = pytest.mark.unit
AT = SourceCodeLocation(filename="cdc.sql", line_number=7)


def test_create_flow_auto_cdc_into_with_every_clause() -> None:
    flow = auto_cdc_flow(
        """CREATE FLOW customers_flow AS AUTO CDC INTO customers
             FROM STREAM(LIVE.customers_cdc) KEYS (id, region)
             APPLY AS DELETE WHEN operation = 'DELETE'
             SEQUENCE BY sequence_num
             COLUMNS * EXCEPT (operation, sequence_num)
             STORED AS SCD TYPE 2
             TRACK HISTORY ON * EXCEPT (city)""",
        AT,
    )
    assert flow is not None
    assert (flow.name, flow.target, flow.source, flow.keys) == (
        "customers_flow",
        "customers",
        "customers_cdc",
        ["id", "region"],
    )
    assert flow.apply_as_deletes == "operation = 'DELETE'" and flow.sequence_by == "sequence_num"
    assert flow.except_column_list == ["operation", "sequence_num"] and flow.column_list is None
    assert flow.stored_as_scd_type == 2 and flow.track_history_except_column_list == ["city"]


def test_apply_changes_into_is_named_for_its_target_and_defaults_to_scd1() -> None:
    flow = auto_cdc_flow(
        "APPLY CHANGES INTO `latest` FROM STREAM orders KEYS (customer_id) SEQUENCE BY order_id COLUMNS (customer_id, amount)",
        AT,
    )
    assert flow is not None
    assert (flow.name, flow.target, flow.source, flow.keys) == ("latest", "latest", "orders", ["customer_id"])
    assert (
        flow.stored_as_scd_type == 1 and flow.column_list == ["customer_id", "amount"] and flow.apply_as_deletes is None
    )


def test_other_statements_are_not_auto_cdc() -> None:
    assert auto_cdc_flow("CREATE FLOW f AS INSERT INTO t BY NAME SELECT * FROM STREAM(s)", AT) is None


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("APPLY CHANGES INTO t FROM s KEYS (k) SEQUENCE BY n", r"cdc\.sql:7: .* write FROM STREAM\(s\)"),
        (
            "APPLY CHANGES INTO t FROM STREAM(s) KEYS (k) IGNORE NULL UPDATES SEQUENCE BY n",
            "IGNORE NULL UPDATES is not supported; leave it out",
        ),
        ("APPLY CHANGES INTO t FROM STREAM(s) KEYS (k) STORED AS SCD TYPE 1", "SEQUENCE BY names one column"),
        (
            "APPLY CHANGES INTO t FROM STREAM(s) KEYS (k) SEQUENCE BY n STORED AS BITEMPORAL",
            "STORED AS BITEMPORAL is not supported",
        ),
        (
            "APPLY CHANGES INTO t FROM STREAM(s) KEYS (k) SEQUENCE BY n TRACK HISTORY ON (a)",
            "TRACK HISTORY ON needs STORED AS SCD TYPE 2",
        ),
        (
            "CREATE FLOW f AS AUTO CDC ONCE INTO t FROM STREAM(s) KEYS (k) SEQUENCE BY n",
            "AUTO CDC ONCE is not supported",
        ),
        ("APPLY CHANGES INTO t FROM STREAM(s) KEYS (k) SEQUENCE BY n COLUMNS a, b", r"COLUMNS takes \(col, \.\.\.\)"),
    ],
    ids=["not-a-stream", "ignore-null-updates", "no-sequence", "bitemporal", "track-scd1", "once", "columns"],
)
def test_what_is_not_carried_out_is_one_sentence(statement: str, message: str) -> None:
    with pytest.raises(DeclarationError, match=message):
        auto_cdc_flow(statement, AT)
