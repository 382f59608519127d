"""Spark errors are told apart by their error condition where PySpark carries one (classic and
Connect exceptions alike), not only by words in their message. Spark-free: the exceptions are
built as a Connect client receives them."""

from __future__ import annotations

import pytest
from pyspark.errors.exceptions.connect import SparkConnectGrpcException

from lakehouse_assets.lib.engine.errors import conditions, engine_lost, short_error, transient_cause

pytestmark = pytest.mark.unit


def raised(condition: str, message: str = "something went wrong") -> SparkConnectGrpcException:
    return SparkConnectGrpcException(message=message, errorClass=condition, messageParameters={})


def test_a_condition_and_its_parents_are_read_through_causes() -> None:
    try:
        try:
            raise raised("INVALID_HANDLE.SESSION_CHANGED")
        except SparkConnectGrpcException as inner:
            raise RuntimeError("the run failed") from inner
    except RuntimeError as outer:
        assert conditions(outer) == {"INVALID_HANDLE", "INVALID_HANDLE.SESSION_CHANGED"}
    assert conditions(ValueError("plain")) == set()


def test_a_changed_session_is_a_lost_engine_whatever_the_message_says() -> None:
    error = raised("INVALID_HANDLE.SESSION_CHANGED", "the handle is no longer valid")
    assert engine_lost(error, "sc://127.0.0.1:15002") is not None
    assert transient_cause(error, "sc://127.0.0.1:15002") == (
        "the Spark engine at sc://127.0.0.1:15002 was unreachable or restarted"
    )
    assert engine_lost(raised("DIVIDE_BY_ZERO"), "sc://127.0.0.1:15002") is None


def test_a_late_python_worker_is_transient_and_a_state_mismatch_asks_for_a_full_refresh() -> None:
    late = raised("PYTHON_WORKER_FAILED_TO_CONNECT", "the worker did not answer")
    assert "did not connect back in time" in (transient_cause(late, "") or "")
    changed = raised("STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE", "keys differ")
    assert "run a full refresh of this table" in short_error(changed)
    assert transient_cause(raised("DIVIDE_BY_ZERO"), "") is None


def test_a_csv_record_wider_than_the_parser_is_named_in_words() -> None:
    """The text Spark 4.2 gave for a landed CSV with a record of 30,000 fields (trimmed)."""
    text = (
        "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///l/customers/many.csv.  SQLSTATE: KD001\n"
        "Caused by: java.lang.ArrayIndexOutOfBoundsException: Index 20480 out of bounds for length 20480\n"
        "\tat com.univocity.parsers.common.ParserOutput.valueParsed(ParserOutput.java:373)\n"
    )
    assert short_error(RuntimeError(text)) == (
        "cannot read landed file file:///l/customers/many.csv "
        "(a CSV record in it holds more than 20480 fields (the CSV option maxColumns))"
    )
