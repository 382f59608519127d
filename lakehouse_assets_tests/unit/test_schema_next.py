"""Schema evolution decided without Spark or files: the versions ``next_schema`` and
``declared_steps`` ask to record, per mode, from schemas written in the test."""

from __future__ import annotations

import pytest

from lakehouse_assets.lib.engine.schema.evolution import declared_steps, new_columns, next_schema, typed
from lakehouse_assets.lib.errors import LakehouseError

pytestmark = pytest.mark.unit

FIRST = {"id": "a.json", "amount": "a.json", "coupon": "b.json"}


def first_in(columns: list[str]) -> dict[str, str]:
    return {c: FIRST[c] for c in columns}


def decide(known, found, mode, hints=None):
    return next_schema(known, hints or {}, found, mode, first_in, table="t", where="landing/x")


def test_a_first_schema_is_inferred_with_hints_over_types_and_hinted_columns_added() -> None:
    found = typed({"id": "bigint", "amount": "double"}, {"amount": "decimal(10,2)", "ts": "timestamp"}, True)
    (step,) = decide(None, found, "addNewColumns", hints={"amount": "decimal(10,2)", "ts": "timestamp"})
    assert step.columns == {"id": "bigint", "amount": "decimal(10,2)", "ts": "timestamp"}
    assert step.added == {} and step.first_files == {"id": "a.json", "amount": "a.json"}
    assert step.says == ("inferred the schema of landing/x: id bigint, amount decimal(10,2), ts timestamp",)


def test_new_fields_are_added_refused_or_ignored_by_mode() -> None:
    known = {"id": "bigint", "amount": "double"}
    found = {"ID": "bigint", "amount": "double", "coupon": "string"}  # names match case-insensitively
    (added,) = decide(known, found, "addNewColumns")
    assert added.columns == {**known, "coupon": "string"} and added.added == {"coupon": "string"}
    assert added.says == ("added column coupon string (first in b.json)",)
    with pytest.raises(LakehouseError, match=r"b\.json in landing/x brings new field\(s\) coupon"):
        decide(known, found, "failOnNewColumns")
    assert decide(known, found, "rescue") == [] and decide(known, found, "none") == []


def test_nothing_to_infer_from_is_one_sentence() -> None:
    with pytest.raises(LakehouseError, match="holds no field to infer a schema from"):
        decide(None, {}, "addNewColumns")


def test_schema_given_then_grown_by_the_user() -> None:
    (first,) = declared_steps(None, {"id": "bigint"})
    assert first.columns == {"id": "bigint"} and not first.says
    (grown,) = declared_steps({"id": "bigint"}, {"id": "bigint", "kwh": "double"})
    assert grown.columns == {"id": "bigint", "kwh": "double"} and grown.added == {"kwh": "double"}
    assert declared_steps({"id": "bigint"}, {"ID": "bigint"}) == []


def test_types_not_inferred_are_strings_at_the_top_level_only() -> None:
    found = {"id": "bigint", "tags": "array<string>", "geo": "struct<lat:double>"}
    assert typed(found, {}, False) == {"id": "string", "tags": "array<string>", "geo": "struct<lat:double>"}
    assert new_columns({"a": "int", "B": "int"}, {"b": "int"}) == {"a": "int"}
