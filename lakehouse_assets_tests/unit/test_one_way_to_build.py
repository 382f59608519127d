"""Every way of building a table meets the same refusals: ``@streaming_table`` and a
:class:`TableSpec` made directly, as the SDP, Lakeflow, SQL-file and Auto Loader builders make
theirs, stop with the same sentence."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lakehouse_assets.lib.declare.expectations import expect
from lakehouse_assets.lib.declare.flows import append_flow
from lakehouse_assets.lib.declare.inputs import landing, static, stream
from lakehouse_assets.lib.declare.quarantine import Quarantine
from lakehouse_assets.lib.declare.sinks import overwrite, recompute, to_delta
from lakehouse_assets.lib.declare.table import TableSpec, streaming_table
from lakehouse_assets.lib.errors import DeclarationError

pytestmark = pytest.mark.unit


def two(a, b):
    return a


def one(a):
    return a


REFUSALS: dict[str, dict] = {
    "recompute over two streams": {
        "transform": two,
        "inputs": {"a": stream("x"), "b": stream("y")},
        "sink": recompute(["k"], reread_by="d"),
    },
    "recompute over files": {
        "transform": one,
        "inputs": {"a": landing("raw", format="json")},
        "sink": recompute(["k"], reread_by="d"),
    },
    "overwrite over a stream": {"transform": one, "inputs": {"a": stream("x")}, "sink": overwrite()},
    "overwrite with a quarantine": {
        "transform": one,
        "inputs": {"a": static("x")},
        "sink": overwrite(),
        "quarantine": Quarantine("t_quarantine"),
    },
    "a Delta sink with expectations": {
        "transform": one,
        "inputs": {"a": stream("x")},
        "sink": to_delta("/tmp/out"),
        "expectations": [expect("k", "k > 0")],
    },
    "flows into an overwrite table": {
        "transform": one,
        "inputs": {"a": static("x")},
        "sink": overwrite(),
        "flows": [append_flow("more", inputs={"a": static("y")})],
    },
    "partitioned and clustered": {
        "transform": one,
        "inputs": {"a": stream("x")},
        "partition_by": ["d"],
        "cluster_by": ["k"],
    },
}


def through_the_decorator(options: dict) -> Callable[[], object]:
    settings = {k: v for k, v in options.items() if k not in ("transform", "inputs")}
    return lambda: streaming_table(group="g", name="t", inputs=options["inputs"], **settings)(options["transform"])


def made_directly(options: dict) -> Callable[[], object]:
    return lambda: TableSpec(name="t", group="g", **options)


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_each_refusal_is_met_on_both_paths(refusal: str) -> None:
    messages = []
    for build in (through_the_decorator, made_directly):
        with pytest.raises(DeclarationError) as refused:
            build(REFUSALS[refusal])()
        messages.append(str(refused.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith("t: ")


def test_a_valid_table_passes_both_paths() -> None:
    options = {
        "transform": two,
        "inputs": {"a": stream("x"), "b": static("y")},
        "sink": recompute(["k"], reread_by="d"),
    }
    assert through_the_decorator(options)().sink == made_directly(options)().sink
